# Prepared datasets: canonical uint8 tensors + manifest (source, counts, sha256, subset flag).


# {dataset} is the prepared folder's key: the dataset's name, or for a user's own file its name and md5
# (replikit.data.freshness.prepared_key), so a file made again is prepared again.
rule prepare_dataset:
    output:
        **prepared_files("{dataset}"),
    wildcard_constraints:
        dataset="|".join(prepared_key(name) for name in DATASETS),
    params:
        search_paths=config["data"]["search_paths"],
        sources=config["data"]["sources"],
        download_dir="resources/downloads",
    log:
        "logs/data/{dataset}.log",
    benchmark:
        "logs/benchmarks/data/{dataset}.tsv"
    resources:
        mem_mb=4000,
        runtime=60,
    threads: 1
    # every paper's jobs wait for it (replikit.plan.schedule)
    priority: first_of_all(STAGE_SECONDS)
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/prepare_dataset.py"
