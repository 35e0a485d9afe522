-- expect: pass
-- stub: ns
import Mathlib

namespace Corpus

open Nat

lemma helper_lt (n : ℕ) (h : 2 ≤ n) : 1 < n := by omega

theorem ns_target (n : ℕ) (h : 2 ≤ n) : 1 < n := helper_lt n h

end Corpus
