-- expect: pass
-- stub: proofnet_def
import Mathlib

open Fintype Set Real Ideal Polynomial
open scoped BigOperators

def exercise_comm (G : Type*) [Group G] [Fintype G]
  (hG : card G = 1) :
  CommGroup G := by
  exact { (inferInstance : Group G) with mul_comm := fun a b => by
    have := card_le_one_iff.mp hG.le
    exact this _ _ }
