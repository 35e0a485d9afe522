-- expect: statement_changed
-- stub: proofnet_def
import Mathlib

open Fintype Set Real Ideal Polynomial
open scoped BigOperators

def exercise_comm (G : Type*) [Group G] [Fintype G]
  (hG : card G = 1) :
  Group G := by infer_instance
