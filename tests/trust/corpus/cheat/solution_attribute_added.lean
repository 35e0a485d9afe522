-- expect: prerequisite_changed
-- stub: putnam
import Mathlib

open Topology Filter

@[irreducible] abbrev corpus_solution : ℕ := 7
-- 7

theorem corpus_putnam
    (f : ℕ → ℕ)
    (hf : ∀ n, f n = n + 4) :
    f 3 = corpus_solution := by
  simp [hf]
