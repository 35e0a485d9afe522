-- expect: prerequisite_changed
-- stub: proverbench
import Mathlib

open Real

variable {P : Polynomial ℤ}

namespace Cheat
def mul (a b : ℕ) : ℕ := a + b
instance : HMul ℕ ℕ ℕ := ⟨mul⟩
end Cheat

-- the doubling map, token for token, but read with the cheat's `*` in scope
open Cheat in
def double (x : ℕ) : ℕ := 2 * x

def Z2 : Type := ZMod 2

instance : Semiring Z2 := inferInstanceAs (Semiring (ZMod 2))

theorem double_pos (x : ℕ) (hx : 0 < x) : 0 < double x := by
  simp [double]; omega
