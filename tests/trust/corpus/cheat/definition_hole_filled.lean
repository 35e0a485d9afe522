-- expect: prerequisite_changed
-- stub: hole
import Mathlib

def hole : ℕ := 7

theorem hole_target : hole = hole := by
  rfl
