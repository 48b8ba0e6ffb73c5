"""Benchmark: File Search's retrieval modes on OpenSearch (the k-NN plugin's Lucene engine,
projections/chunks_opensearch.py), as bench.hybrid_search measures them on the embedded index.

- **Quality** on the retrieval set (tests/fixtures/retrieval_set.json), through
  `domain.retrieval.retrieve` as the `search` capability calls it: recall@5 and nDCG@10 of
  lexical, semantic and hybrid (bench.hybrid_search's `evaluate`, the same questions and goals).
- **Latency** over `--chunks` chunks of one tool (bench.search_index's English-like text, each
  chunk embedded), the queries of bench.hybrid_search, each through `retrieve` in lexical and in
  hybrid mode, interleaved: the wall clock of each (the node is another process on the same
  machine, so its load is in it), and the node's CPU time a query (its process's, from /proc).
  Goal (issue 36): hybrid p95 ≤ 2 × lexical p95.

The node: `OPENSEARCH_URL`, else the project's own (`scripts/opensearch.sh start`, with the k-NN
plugin); the bench's indices are its own, deleted afterwards.

Run: `python -m bench.hybrid_search_opensearch [--quick]` (quick: 20,000 chunks, 50 queries).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import Progress, Row, millis, standalone
from bench.hybrid_search import LIMIT, MODES, RETRIEVAL, TENANT, TOOL, embedder_and_query, evaluate, index_set, load_set, percentile
from domain.documents import TEXT, Chunk, IndexedDocument, query_terms
from domain.retrieval import HYBRID, LEXICAL, retrieve

TITLE = "File Search retrieval: lexical, semantic and hybrid on OpenSearch (k-NN plugin, Lucene HNSW)"
NOTES = ("(quality: tests/fixtures/retrieval_set.json, limit 10; latency: retrieve() as the search capability calls it,\n"
         " the query's embedding included, wall clock with the node on the same machine; node CPU from /proc)")
PROJECT = Path(__file__).resolve().parents[1]


def node_url() -> str:
    url = os.environ.get("OPENSEARCH_URL")
    if url:
        return url
    started = subprocess.run([str(PROJECT / "scripts" / "opensearch.sh"), "start"], capture_output=True, text=True,
                             check=True, timeout=600)
    return started.stdout.strip().splitlines()[-1]


def node_cpu() -> float | None:
    """The CPU seconds of the project's node so far (None when it is not this machine's own node)."""
    pidfile = PROJECT / ".engines" / "opensearch" / "node" / "pid"
    try:
        fields = Path(f"/proc/{pidfile.read_text().strip()}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(argv: Sequence[str] | None = None) -> tuple[list[Row], dict[str, Any]]:
    from opensearchpy import OpenSearch

    from bench.search_index import Language
    from infrastructure.embeddings import to_bytes
    from projections.chunks_opensearch import OpenSearchDocumentIndex

    parser = argparse.ArgumentParser(prog="python -m bench.hybrid_search_opensearch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 chunks, 50 queries")
    parser.add_argument("--chunks", type=int)
    parser.add_argument("--queries", type=int)
    args = parser.parse_args(argv)
    chunks = args.chunks if args.chunks is not None else (20_000 if args.quick else 100_000)
    queries = args.queries or (50 if args.quick else 100)
    progress = Progress("hybrid_search_opensearch")
    data = load_set()
    embedder, embed = embedder_and_query()
    client = OpenSearch(hosts=[node_url()], timeout=120)
    alias = f"bench-hybrid-{uuid.uuid4().hex[:8]}"
    rows: list[Row] = []
    info: dict[str, Any] = {"model": embedder.model}
    try:
        index = OpenSearchDocumentIndex(client, index=alias, replicas=0)
        if not index.vectors:
            raise SystemExit("the OpenSearch node has no k-NN plugin (scripts/opensearch.sh stop && start)")
        index_set(index, embedder, data, TENANT, "set")
        quality = evaluate(index, embed, data, TENANT, "set")
        info["quality"] = quality
        for kind in ("paraphrase", "lexical"):
            figures = quality[kind]
            for mode in MODES:
                goal, meets, ratio = "", None, None
                if kind == "paraphrase" and mode == HYBRID:
                    goal, ratio = "≥ 0.80 (ratio: of 0.80) and ≥ lexical + 0.25", figures[HYBRID]["recall@5"] / 0.8
                    meets = figures[HYBRID]["recall@5"] >= 0.8 and figures[HYBRID]["recall@5"] >= figures[LEXICAL]["recall@5"] + 0.25
                if kind == "lexical" and mode == HYBRID:
                    goal, meets = "≥ lexical", figures[HYBRID]["recall@5"] >= figures[LEXICAL]["recall@5"]
                rows.append(Row(f"{kind} questions: {mode}, recall@5 / nDCG@10",
                                f"{figures[mode]['recall@5']:.2f} / {figures[mode]['ndcg@10']:.2f}",
                                f"lexical {figures[LEXICAL]['recall@5']:.2f}", ratio, goal=goal, meets=meets))
        if chunks:
            language = Language(seed=36)
            per_document, start, began = 20, 0, time.perf_counter()
            while start < chunks:
                batch = []
                for d in range(start // per_document, min(chunks, start + 2_000) // per_document):
                    texts = [language.document(1_400) for _ in range(per_document)]
                    vectors = embedder.embed_array(texts)
                    batch.append((TENANT, TOOL, IndexedDocument(f"doc{d}", f"Document {d}", f"doc{d}.txt", TEXT, embedder.model),
                                  [Chunk(n, n * 1_400, (n + 1) * 1_400, t, vector=to_bytes(vectors[n])) for n, t in enumerate(texts)]))
                index.put_many(batch)
                start += per_document * len(batch)
                progress(f"indexed {start:,} of {chunks:,} chunks")
            info["built_seconds"] = time.perf_counter() - began
            client.indices.forcemerge(index=alias, max_num_segments=1, request_timeout=3600)  # as a settled index
            asked = [language.query()[0] for _ in range(queries)]
            asked += [q["question"] for q in data["questions"]][:queries]
            for mode in (LEXICAL, HYBRID):  # warm
                for query in asked[:10]:
                    retrieve(index, embed, TENANT, TOOL, query, query_terms(query), LIMIT, None, RETRIEVAL[mode])
            walls: dict[str, list[float]] = {LEXICAL: [], HYBRID: []}
            node: dict[str, float] = {LEXICAL: 0.0, HYBRID: 0.0}
            for i, query in enumerate(asked):
                terms = query_terms(query)
                if not terms:
                    continue
                for mode in (LEXICAL, HYBRID) if i % 2 == 0 else (HYBRID, LEXICAL):
                    cpu, began = node_cpu(), time.perf_counter()
                    retrieve(index, embed, TENANT, TOOL, query, terms, LIMIT, None, RETRIEVAL[mode])
                    walls[mode].append(time.perf_counter() - began)
                    after = node_cpu()
                    if cpu is not None and after is not None:
                        node[mode] += after - cpu
            lexical, hybrid = walls[LEXICAL], walls[HYBRID]
            ratio = percentile(hybrid, 95) / percentile(lexical, 95)
            rows.append(Row(f"search over {chunks:,} chunks, hybrid wall p50 / p95 ({len(hybrid)} queries)",
                            f"{millis(percentile(hybrid, 50))} / {millis(percentile(hybrid, 95))}",
                            f"lexical {millis(percentile(lexical, 50))} / {millis(percentile(lexical, 95))}",
                            ratio, goal="≤ 2.00", meets=ratio <= 2.0))
            if node_cpu() is not None:
                rows.append(Row("  the node's CPU a query, mean (hybrid against lexical; 10 ms ticks)",
                                millis(node[HYBRID] / len(hybrid)), f"lexical {millis(node[LEXICAL] / len(lexical))}"))
            rows.append(Row("  indexing (embedding included), chunks a second", f"{chunks / info['built_seconds']:,.0f}", ""))
    finally:
        client.indices.delete(index=f"{alias}*", ignore_unavailable=True, allow_no_indices=True, expand_wildcards="all")
        client.close()
    info["load"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return rows, info


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
