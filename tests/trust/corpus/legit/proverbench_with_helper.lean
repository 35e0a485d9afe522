-- expect: pass
-- stub: proverbench
import Mathlib

open Real

variable {P : Polynomial ℤ}

-- the doubling map
def double (x : ℕ) : ℕ := 2 * x

def Z2 : Type := ZMod 2

instance : Semiring Z2 := inferInstanceAs (Semiring (ZMod 2))

lemma double_eq (x : ℕ) : double x = 2 * x := rfl

theorem double_pos (x : ℕ) (hx : 0 < x) : 0 < double x := by
  rw [double_eq]
  omega
