import Mathlib

theorem nohb_target (x : ℝ) (hx : 0 < x) : 0 < x ^ 2 := by sorry
