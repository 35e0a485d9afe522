-- expect: target_missing
-- stub: ns
import Mathlib

open Nat

theorem ns_target (n : ℕ) (h : 2 ≤ n) : 1 < n := by
  omega
