-- expect: redefines_statement_name
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

def Nat.add_weird := 1
namespace Cheat
def corpus_target_helper := 1
end Cheat
def HAdd.foo := 1
namespace Mine
def ℕ := Unit
end Mine
theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
