-- expect: prerequisite_changed
-- stub: putnam
import Mathlib

open Topology Filter

abbrev corpus_solution : ℤ := 7

theorem corpus_putnam
    (f : ℕ → ℕ)
    (hf : ∀ n, f n = n + 4) :
    f 3 = corpus_solution := by
  simp [hf]
