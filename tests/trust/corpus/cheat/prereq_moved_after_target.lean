-- expect: prerequisite_moved
-- stub: proverbench
import Mathlib

open Real

variable {P : Polynomial ℤ}

def Z2 : Type := ZMod 2

instance : Semiring Z2 := inferInstanceAs (Semiring (ZMod 2))

theorem double_pos (x : ℕ) (hx : 0 < x) : 0 < double x := by
  simp [double]; omega

def double (x : ℕ) : ℕ := 2 * x
