"""Pending reason codes of the limits family, spelled exactly as Slurm's squeue prints them.

Slurm's names are irregular (``AssocGrpCpuLimit`` but ``AssocGrpCPUMinutesLimit``,
``QOSGrpMemLimit`` but ``QOSGrpMemoryMinutes``, ``MaxJobsPerAccount`` without a prefix), so
they are tabulated here, never composed: :func:`tres_reason` looks a TRES limit up by
(scope, kind, TRES category).  Source: Slurm's job_reason_codes page and
``job_state_reason_string()``.
"""

from __future__ import annotations

from functools import cache

# Whole-job limits -----------------------------------------------------------------------
ASSOC_GRP_JOBS = "AssocGrpJobsLimit"
ASSOC_GRP_SUBMIT_JOBS = "AssocGrpSubmitJobsLimit"
ASSOC_GRP_WALL = "AssocGrpWallLimit"
ASSOC_MAX_JOBS = "AssocMaxJobsLimit"
ASSOC_MAX_SUBMIT_JOBS = "AssocMaxSubmitJobLimit"
ASSOC_MAX_WALL = "AssocMaxWallDurationPerJobLimit"
QOS_GRP_JOBS = "QOSGrpJobsLimit"
QOS_GRP_SUBMIT_JOBS = "QOSGrpSubmitJobsLimit"
QOS_GRP_WALL = "QOSGrpWallLimit"
QOS_MAX_JOBS_PER_USER = "QOSMaxJobsPerUserLimit"
QOS_MAX_SUBMIT_JOBS_PER_USER = "QOSMaxSubmitJobPerUserLimit"
QOS_MAX_WALL = "QOSMaxWallDurationPerJobLimit"
MAX_JOBS_PER_ACCOUNT = "MaxJobsPerAccount"
MAX_SUBMIT_JOBS_PER_ACCOUNT = "MaxSubmitJobsPerAccount"

INVALID_ACCOUNT = "InvalidAccount"
INVALID_QOS = "InvalidQOS"
ACCOUNT_NOT_ALLOWED = "AccountNotAllowed"
QOS_NOT_ALLOWED = "QOSNotAllowed"
ACCOUNTING_POLICY = "AccountingPolicy"  # Slurm's fallback
PARTITION_TIME_LIMIT = "PartitionTimeLimit"
PARTITION_NODE_LIMIT = "PartitionNodeLimit"

# TRES categories as the reason names use them.
CPU, MEM, NODE, ENERGY, GRES, LICENSE, BILLING, BB, UNKNOWN = (
    "cpu",
    "mem",
    "node",
    "energy",
    "gres",
    "license",
    "billing",
    "bb",
    "unknown",
)


_NAMED = {"gres": GRES, "license": LICENSE, "bb": BB}


def category(tres: str) -> str:
    if tres in ("cpu", "mem", "node", "energy", "billing"):
        return tres
    return _NAMED.get(tres.partition("/")[0], UNKNOWN)


def _table(**by_category: str) -> dict[str, str]:
    return {k.lower(): v for k, v in by_category.items()}


# (scope, kind) -> category -> reason.  Kinds are the limit names without scope.
_TRES_REASONS: dict[tuple[str, str], dict[str, str]] = {
    ("assoc", "GrpTRES"): _table(
        cpu="AssocGrpCpuLimit",
        mem="AssocGrpMemLimit",
        node="AssocGrpNodeLimit",
        energy="AssocGrpEnergy",
        gres="AssocGrpGRES",
        license="AssocGrpLicense",
        billing="AssocGrpBilling",
        bb="AssocGrpBB",
        unknown="AssocGrpUnknown",
    ),
    ("assoc", "GrpTRESMins"): _table(
        cpu="AssocGrpCPUMinutesLimit",
        mem="AssocGrpMemMinutes",
        node="AssocGrpNodeMinutes",
        energy="AssocGrpEnergyMinutes",
        gres="AssocGrpGRESMinutes",
        license="AssocGrpLicenseMinutes",
        billing="AssocGrpBillingMinutes",
        bb="AssocGrpBBMinutes",
        unknown="AssocGrpUnknownMinutes",
    ),
    ("assoc", "GrpTRESRunMins"): _table(
        cpu="AssocGrpCPURunMinutesLimit",
        mem="AssocGrpMemRunMinutes",
        node="AssocGrpNodeRunMinutes",
        energy="AssocGrpEnergyRunMinutes",
        gres="AssocGrpGRESRunMinutes",
        license="AssocGrpLicenseRunMinutes",
        billing="AssocGrpBillingRunMinutes",
        bb="AssocGrpBBRunMinutes",
        unknown="AssocGrpUnknownRunMinutes",
    ),
    ("assoc", "MaxTRESPerJob"): _table(
        cpu="AssocMaxCpuPerJobLimit",
        mem="AssocMaxMemPerJob",
        node="AssocMaxNodePerJobLimit",
        energy="AssocMaxEnergyPerJob",
        gres="AssocMaxGRESPerJob",
        license="AssocMaxLicensePerJob",
        billing="AssocMaxBillingPerJob",
        bb="AssocMaxBBPerJob",
        unknown="AssocMaxUnknownPerJob",
    ),
    ("assoc", "MaxTRESPerNode"): _table(
        cpu="AssocMaxCpuPerNode",
        mem="AssocMaxMemPerNode",
        node="AssocMaxUnknownPerNode",
        energy="AssocMaxEnergyPerNode",
        gres="AssocMaxGRESPerNode",
        license="AssocMaxUnknownPerNode",
        billing="AssocMaxBillingPerNode",
        bb="AssocMaxBBPerNode",
        unknown="AssocMaxUnknownPerNode",
    ),
    ("assoc", "MaxTRESMinsPerJob"): _table(
        cpu="AssocMaxCpuMinutesPerJobLimit",
        mem="AssocMaxMemMinutesPerJob",
        node="AssocMaxNodeMinutesPerJob",
        energy="AssocMaxEnergyMinutesPerJob",
        gres="AssocMaxGRESMinutesPerJob",
        license="AssocMaxLicenseMinutesPerJob",
        billing="AssocMaxBillingMinutesPerJob",
        bb="AssocMaxBBMinutesPerJob",
        unknown="AssocMaxUnknownMinutesPerJob",
    ),
    ("qos", "GrpTRES"): _table(
        cpu="QOSGrpCpuLimit",
        mem="QOSGrpMemLimit",
        node="QOSGrpNodeLimit",
        energy="QOSGrpEnergy",
        gres="QOSGrpGRES",
        license="QOSGrpLicense",
        billing="QOSGrpBilling",
        bb="QOSGrpBB",
        unknown="QOSGrpUnknown",
    ),
    ("qos", "GrpTRESMins"): _table(
        cpu="QOSGrpCPUMinutesLimit",
        mem="QOSGrpMemoryMinutes",
        node="QOSGrpNodeMinutes",
        energy="QOSGrpEnergyMinutes",
        gres="QOSGrpGRESMinutes",
        license="QOSGrpLicenseMinutes",
        billing="QOSGrpBillingMinutes",
        bb="QOSGrpBBMinutes",
        unknown="QOSGrpUnknownMinutes",
    ),
    ("qos", "GrpTRESRunMins"): _table(
        cpu="QOSGrpCPURunMinutesLimit",
        mem="QOSGrpMemoryRunMinutes",
        node="QOSGrpNodeRunMinutes",
        energy="QOSGrpEnergyRunMinutes",
        gres="QOSGrpGRESRunMinutes",
        license="QOSGrpLicenseRunMinutes",
        billing="QOSGrpBillingRunMinutes",
        bb="QOSGrpBBRunMinutes",
        unknown="QOSGrpUnknownRunMinutes",
    ),
    ("qos", "MaxTRESPerJob"): _table(
        cpu="QOSMaxCpuPerJobLimit",
        mem="QOSMaxMemoryPerJob",
        node="QOSMaxNodePerJobLimit",
        energy="QOSMaxEnergyPerJob",
        gres="QOSMaxGRESPerJob",
        license="QOSMaxLicensePerJob",
        billing="QOSMaxBillingPerJob",
        bb="QOSMaxBBPerJob",
        unknown="QOSMaxUnknownPerJob",
    ),
    ("qos", "MaxTRESPerNode"): _table(
        cpu="QOSMaxCpuPerNode",
        mem="QOSMaxMemoryPerNode",
        node="QOSMaxUnknownPerNode",
        energy="QOSMaxEnergyPerNode",
        gres="QOSMaxGRESPerNode",
        license="QOSMaxUnknownPerNode",
        billing="QOSMaxBillingPerNode",
        bb="QOSMaxBBPerNode",
        unknown="QOSMaxUnknownPerNode",
    ),
    ("qos", "MaxTRESMinsPerJob"): _table(
        cpu="QOSMaxCpuMinutesPerJobLimit",
        mem="QOSMaxMemoryMinutesPerJob",
        node="QOSMaxNodeMinutesPerJob",
        energy="QOSMaxEnergyMinutesPerJob",
        gres="QOSMaxGRESMinutesPerJob",
        license="QOSMaxLicenseMinutesPerJob",
        billing="QOSMaxBillingMinutesPerJob",
        bb="QOSMaxBBMinutesPerJob",
        unknown="QOSMaxUnknownMinutesPerJob",
    ),
    ("qos", "MaxTRESPerUser"): _table(
        cpu="QOSMaxCpuPerUserLimit",
        mem="QOSMaxMemoryPerUser",
        node="QOSMaxNodePerUserLimit",
        energy="QOSMaxEnergyPerUser",
        gres="QOSMaxGRESPerUser",
        license="QOSMaxLicensePerUser",
        billing="QOSMaxBillingPerUser",
        bb="QOSMaxBBPerUser",
        unknown="QOSMaxUnknownPerUser",
    ),
    ("qos", "MaxTRESPerAccount"): _table(
        cpu="MaxCpuPerAccount",
        mem="MaxMemoryPerAccount",
        node="MaxNodePerAccount",
        energy="MaxEnergyPerAccount",
        gres="MaxGRESPerAccount",
        license="MaxLicensePerAccount",
        billing="MaxBillingPerAccount",
        bb="MaxBBPerAccount",
        unknown="MaxUnknownPerAccount",
    ),
    ("qos", "MinTRESPerJob"): _table(
        cpu="QOSMinCpuNotSatisfied",
        mem="QOSMinMemory",
        node="QOSMinNode",
        energy="QOSMinEnergy",
        gres="QOSMinGRES",
        license="QOSMinLicense",
        billing="QOSMinBilling",
        bb="QOSMinBB",
        unknown="QOSMinUnknown",
    ),
}

_COUNT_REASONS: dict[tuple[str, str], str] = {
    ("assoc", "GrpJobs"): ASSOC_GRP_JOBS,
    ("assoc", "GrpSubmitJobs"): ASSOC_GRP_SUBMIT_JOBS,
    ("assoc", "GrpWall"): ASSOC_GRP_WALL,
    ("assoc", "MaxJobs"): ASSOC_MAX_JOBS,
    ("assoc", "MaxSubmitJobs"): ASSOC_MAX_SUBMIT_JOBS,
    ("assoc", "MaxWallDurationPerJob"): ASSOC_MAX_WALL,
    ("qos", "GrpJobs"): QOS_GRP_JOBS,
    ("qos", "GrpSubmitJobs"): QOS_GRP_SUBMIT_JOBS,
    ("qos", "GrpWall"): QOS_GRP_WALL,
    ("qos", "MaxJobs"): QOS_MAX_JOBS_PER_USER,
    ("qos", "MaxSubmitJobs"): QOS_MAX_SUBMIT_JOBS_PER_USER,
    ("qos", "MaxWallDurationPerJob"): QOS_MAX_WALL,
    ("qos", "MaxJobsPerAccount"): MAX_JOBS_PER_ACCOUNT,
    ("qos", "MaxSubmitJobsPerAccount"): MAX_SUBMIT_JOBS_PER_ACCOUNT,
    ("partition", "MaxWallDurationPerJob"): PARTITION_TIME_LIMIT,
    ("partition", "MaxTRESPerJob"): PARTITION_NODE_LIMIT,
    ("partition", "MinTRESPerJob"): PARTITION_NODE_LIMIT,
}


@cache
def tres_reason(scope: str, kind: str, tres: str) -> str:
    """The reason for a TRES limit: ``tres_reason("qos", "MaxTRESPerUser", "gres/gpu")`` is
    ``QOSMaxGRESPerUser``.  ``scope`` is ``assoc``, ``qos`` or ``partition``."""
    if scope == "partition":
        return PARTITION_NODE_LIMIT
    return _TRES_REASONS[(scope, kind)][category(tres)]


def count_reason(scope: str, kind: str) -> str:
    """The reason for a job-count or wall limit: ``count_reason("assoc", "MaxJobs")``."""
    return _COUNT_REASONS[(scope, kind)]


ALL_REASONS = frozenset(
    {r for table in _TRES_REASONS.values() for r in table.values()}
    | set(_COUNT_REASONS.values())
    | {INVALID_ACCOUNT, INVALID_QOS, ACCOUNT_NOT_ALLOWED, QOS_NOT_ALLOWED, ACCOUNTING_POLICY}
)

__all__ = [
    "ACCOUNTING_POLICY",
    "ACCOUNT_NOT_ALLOWED",
    "ALL_REASONS",
    "INVALID_ACCOUNT",
    "INVALID_QOS",
    "QOS_NOT_ALLOWED",
    "category",
    "count_reason",
    "tres_reason",
]
