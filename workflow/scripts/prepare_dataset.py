"""Find or download a dataset and write canonical tensors + manifest."""

from replikit import data
from replikit.jobs import job

with job(snakemake):  # noqa: F821
    p = snakemake.params  # noqa: F821
    prepared = data.prepare(snakemake.wildcards.dataset, p.search_paths, p.download_dir, p.sources)  # noqa: F821
    manifest = data.save(prepared, snakemake.output.tensors, snakemake.output.manifest)  # noqa: F821
    print(manifest)
