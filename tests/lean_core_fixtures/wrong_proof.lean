-- A wrong term-mode proof in `prelude`: the kernel/elaborator rejects it with a type mismatch.
prelude
universe u

inductive MyEq {α : Sort u} (a : α) : α → Prop where
  | refl : MyEq a a

inductive MyNat : Type where
  | zero : MyNat
  | succ : MyNat → MyNat

theorem zero_eq_one : MyEq MyNat.zero (MyNat.succ MyNat.zero) := MyEq.refl
