"""Methods the papers share: SG-MCMC samplers, posterior-ensemble metrics, linear and k-NN
probes, the training-loop benchmark, the loss Hessian's top eigenvalue and feature movement (`curvature`),
and the cost of one training step (`step_cost`: FLOPs, kernel
launches and peak memory under FakeTensorMode, for the plan).

May import: `replikit.core`, `replikit.data`, `replikit.models`."""
