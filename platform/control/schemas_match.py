"""Whether the sites of a job on their own data hold data of the job's schema, from what
they reported (sans I/O). The control plane never looks at the data itself."""

from collections.abc import Mapping

from atoll.platform.data.schema import DataReport, DataSchema

# A site that has not reported yet (never joined) is left for later: its agent checks the
# job against its data when the job starts, and refuses it.
NOT_JOINED = "not joined"


def schema_problems(
    expected: DataSchema, reports: Mapping[str, DataReport | str | None]
) -> str | None:
    """One line naming every site whose data does not fit, or None.

    `reports`: site -> its DataReport, None when it reported no data, or NOT_JOINED.
    """
    no_data = sorted(site for site, r in reports.items() if r is None)
    other = sorted(
        site
        for site, r in reports.items()
        if isinstance(r, DataReport) and r.data_schema != expected
    )
    problems = []
    if other:
        described = "; ".join(f"{site}: {_schema(reports[site])}" for site in other)
        problems.append(
            f"sites {', '.join(other)} hold data of another schema than the job's "
            f"({expected.describe()}): {described}"
        )
    if no_data:
        problems.append(f"sites {', '.join(no_data)} report no data (their site.yaml has no data:)")
    return "; ".join(problems) or None


def _schema(report: DataReport | str | None) -> str:
    assert isinstance(report, DataReport)
    schema = report.data_schema
    return f"{schema.describe()} ({', '.join(schema.classes[:3])}, ...)"
