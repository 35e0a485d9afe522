import Mathlib

open Real

noncomputable def g (x : ℝ) : ℝ := x ^ 3 - 3 * x

/-- Lemma given as an axiom by the benchmark -/
axiom g_crit (x : ℝ) : deriv g x = 3 * x ^ 2 - 3

theorem g_deriv_one : deriv g 1 = 0 := by sorry
