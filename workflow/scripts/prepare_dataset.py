"""Find or download a dataset, check it against its declaration (replikit.data.validate), and write
canonical tensors + manifest. The wildcard is the prepared folder's key (replikit.data.freshness)."""

from replikit.core.jobs import job
from replikit.data import datasets, validate
from replikit.data import prepare as data
from replikit.data.freshness import dataset_of_key
from replikit.papers.registry import get, register_config_datasets

with job(snakemake):  # noqa: F821
    register_config_datasets(snakemake.config)  # noqa: F821
    name = dataset_of_key(snakemake.wildcards.dataset)  # noqa: F821
    if name not in datasets.names():
        for paper in snakemake.config["papers"]:  # noqa: F821
            get(paper)  # registers the datasets the enabled papers declare
    p = snakemake.params  # noqa: F821
    prepared = data.prepare(name, p.search_paths, p.download_dir, p.sources)
    validate.check(prepared, datasets.get(name))  # (before anything is written)
    manifest = data.save(prepared, snakemake.output.tensors, snakemake.output.manifest)  # noqa: F821
    print(manifest)
