-- expect: pass
-- stub: default
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

namespace Aux
theorem _root_.my_root_helper : (2 : ℕ) = 2 := rfl
end Aux

theorem corpus_target (a b : ℕ) (h₀ : a + b = 10) (h₁ : a = 3) : b = 7 := by
  omega
