-- expect: prelude
-- stub: comparator_zero_eq_one
prelude
import Init.Prelude

-- redefine a primitive the kernel accelerates
def Nat.gcd (a b : Nat) : Nat := 1

theorem zero_eq_one : 0 = 1 := by
  sorry
