-- expect: pass
-- stub: putnam
import Mathlib

open Topology Filter

abbrev corpus_solution : ℕ :=
  3 + 4

theorem corpus_putnam (f : ℕ → ℕ) (hf : ∀ n, f n = n + 4) : f 3 = corpus_solution := by
  rw [hf]
