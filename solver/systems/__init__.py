"""Systems arithmetic: chips, rooflines, inference, training, parallelism, collectives, serving."""
