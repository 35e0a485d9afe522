structure Pair where
  fst : Nat
  snd : Nat

theorem pair_fst (p : Pair) (h : p.fst = 1) : p.fst + 0 = 1 := by
  sorry
