import Mathlib

namespace Corpus

open Nat

theorem ns_target (n : ℕ) (h : 2 ≤ n) : 1 < n := by sorry

end Corpus
