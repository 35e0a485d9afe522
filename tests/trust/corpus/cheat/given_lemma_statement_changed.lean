-- expect: prerequisite_changed
-- stub: sorrylemmas
import Mathlib

open ZMod

def Z3 : Type := ZMod 3

lemma helper_given (n : ℕ) (a : ZMod 3) : False := sorry

noncomputable def evalChar := ringChar (ZMod 3)

theorem char_Z3 : evalChar = 3 := by
  exact (helper_given 0 0).elim
