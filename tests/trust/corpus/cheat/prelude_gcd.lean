-- expect: prelude
-- stub: default
prelude
import Init.Prelude

def Nat.gcd (a b : Nat) : Nat := 7
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
