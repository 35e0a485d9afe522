-- expect: redefines_statement_name
-- stub: proverbench
import Mathlib

namespace Cheat
def double (x : ℕ) : ℕ := x + 1
end Cheat

open Real

variable {P : Polynomial ℤ}

-- the doubling map
def double (x : ℕ) : ℕ := 2 * x

def Z2 : Type := ZMod 2

instance : Semiring Z2 := inferInstanceAs (Semiring (ZMod 2))

theorem double_pos (x : ℕ) (hx : 0 < x) : 0 < double x := by
  simp [double]; omega
