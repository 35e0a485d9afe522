-- A "proof" of False through a declared axiom: it compiles, and `#print axioms` exposes it.
prelude

inductive MyFalse : Prop

axiom cheat : MyFalse

theorem t : MyFalse := cheat

#print axioms t
