-- expect: prerequisite_changed
-- stub: comparator_proj
structure Pair where
  fst : Nat
  snd : Empty

theorem pair_fst (p : Pair) (h : p.fst = 1) : p.fst + 0 = 1 := by
  exact p.snd.elim
