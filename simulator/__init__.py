"""fsched's simulator: the live controller's services and pure cores on a virtual clock
(docs/simulator.md)."""
