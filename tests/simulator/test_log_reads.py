"""The log's read of a job after its submission and its start (simulator.observe) compiles
no ORM query: every job of a run made the compiler build the same two statements again
(4% of a run at 10,000 nodes, #18).  What the lines say is test_engine.py's."""

from __future__ import annotations

from django.db.models.sql.compiler import SQLCompiler

from simulator.engine import Engine
from simulator.observe import EventLog
from tests.simulator.test_engine import CONF, JOBS


def test_the_job_reads_of_submit_and_start_lines_compile_nothing(transactional_db, tmp_path, monkeypatch):
    inside, compiled, lines = [], [], []
    execute_sql = SQLCompiler.execute_sql

    def counted(self, *args, **kwargs):
        if inside:
            compiled.append(self.query.model)
        return execute_sql(self, *args, **kwargs)

    def watched(method):
        def run(self, *args, **kwargs):
            inside.append(1)
            try:
                lines.append(method.__name__)
                return method(self, *args, **kwargs)
            finally:
                inside.pop()

        return run

    monkeypatch.setattr(SQLCompiler, "execute_sql", counted)
    monkeypatch.setattr(EventLog, "submitted", watched(EventLog.submitted))
    monkeypatch.setattr(EventLog, "started", watched(EventLog.started))
    Engine(conf_dir=CONF, jobs=JOBS, out_dir=tmp_path, until=120).run()
    assert lines.count("submitted") >= 5 and lines.count("started") >= 3
    assert compiled == []
