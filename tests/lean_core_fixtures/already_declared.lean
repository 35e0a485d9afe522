-- Declaring the same name twice: "`ok` has already been declared" (Lean 4.35.0 wording).
prelude

inductive MyTrue : Prop where
  | intro : MyTrue

theorem ok : MyTrue := MyTrue.intro

theorem ok : MyTrue := MyTrue.intro
