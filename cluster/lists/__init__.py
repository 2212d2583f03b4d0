"""The console's lists (jobs, the node table, events, the audit log): query parameters parsed
into a filter, a sort and a page (``params``), one module per list building its rows, and
the views that render them or export them (``views``)."""
