import Mathlib

open Fintype Set Real Ideal Polynomial
open scoped BigOperators

def exercise_comm (G : Type*) [Group G] [Fintype G]
  (hG : card G = 1) :
  CommGroup G := by sorry
