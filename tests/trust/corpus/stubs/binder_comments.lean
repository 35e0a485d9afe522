import Mathlib

open Finset

theorem commented
    {n : ℕ} (hn : 0 < n)
    -- `s` is a finite set of naturals
    (s : Finset ℕ)
    /- with `n` elements -/
    (hs : s.card = n) :
    0 < s.card := by sorry
