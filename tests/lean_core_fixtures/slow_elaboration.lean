-- A slow elaboration in `prelude` (for TIMEOUT tests): checking 2^20 = 2 * 2^19 on unary
-- numerals makes the elaborator and kernel reduce ~2^20 constructors. It SUCCEEDS (exit 0)
-- after roughly 50 s on one core of the 2-core CI machine (Lean 4.35.0); give it a deadline
-- well below that to exercise timeouts.
prelude
universe u
set_option maxRecDepth 100000000
set_option maxHeartbeats 0

inductive MyEq {α : Sort u} (a : α) : α → Prop where
  | refl : MyEq a a

inductive N : Type where
  | z : N
  | s : N → N

noncomputable def add (a b : N) : N := N.rec (motive := fun _ => N) a (fun _ ih => N.s ih) b
noncomputable def mul (a b : N) : N := N.rec (motive := fun _ => N) N.z (fun _ ih => add ih a) b
noncomputable def pow2 (b : N) : N := N.rec (motive := fun _ => N) (N.s N.z) (fun _ ih => add ih ih) b
noncomputable def k : N := (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s N.z))))))))))))))))))))
noncomputable def km : N := (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s (N.s N.z)))))))))))))))))))

theorem slow : MyEq (pow2 k) (mul (pow2 km) (N.s (N.s N.z))) := MyEq.refl
