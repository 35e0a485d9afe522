-- expect: prerequisite_changed
-- stub: proverbench
import Mathlib

open Real

variable {P : Polynomial ℤ}

axiom double (x : ℕ) : ℕ

def Z2 : Type := ZMod 2

instance : Semiring Z2 := inferInstanceAs (Semiring (ZMod 2))

theorem double_pos (x : ℕ) (hx : 0 < x) : 0 < double x := by
  sorry
