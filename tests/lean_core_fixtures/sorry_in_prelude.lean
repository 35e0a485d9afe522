-- `sorry` in a `prelude` file. Without Init there is no `sorryAx`, so Lean 4.35.0 cannot
-- elaborate it: the declaration gets the error "internal exception #3" (exit code 1), not the
-- "declaration uses `sorry`" warning a normal file gets.
prelude

inductive MyFalse : Prop

theorem s : MyFalse := sorry
