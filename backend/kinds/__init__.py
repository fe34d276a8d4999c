"""Storage of Kubernetes-shaped CRDs in the `kinds` table (shared by Skills and Ghosts)."""
