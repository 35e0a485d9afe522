-- expect: pass
-- stub: sorrylemmas
import Mathlib

open ZMod

def Z3 : Type := ZMod 3

lemma helper_given (n : ℕ) (a : ZMod 3) : n • a = (n : ZMod 3) * a := by
  simp [nsmul_eq_mul]

noncomputable def evalChar := ringChar (ZMod 3)

theorem char_Z3 : evalChar = 3 := by
  simp [evalChar]
