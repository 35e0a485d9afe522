-- A correct term-mode proof in `prelude` (no Init): accepted by the real Lean 4.35.0 kernel.
prelude
universe u

inductive MyEq {α : Sort u} (a : α) : α → Prop where
  | refl : MyEq a a

inductive MyNat : Type where
  | zero : MyNat
  | succ : MyNat → MyNat

theorem my_symm {α : Sort u} {a b : α} (h : MyEq a b) : MyEq b a :=
  MyEq.rec (motive := fun x _ => MyEq x a) MyEq.refl h

theorem one_eq_one : MyEq (MyNat.succ MyNat.zero) (MyNat.succ MyNat.zero) :=
  my_symm MyEq.refl

#print axioms one_eq_one
