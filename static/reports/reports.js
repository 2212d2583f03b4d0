/*
 * reports.js: the Reports page's charts (plotly, served locally by cluster.plotly_asset).
 * The server renders each chart's data into data-report-charts; one <div data-chart> each.
 */
(function () {
  "use strict";

  var BASE = { margin: { t: 10, l: 50, r: 10, b: 60 }, height: 260, legend: { orientation: "h" },
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)" };

  function layout(extra) { return Object.assign({}, BASE, extra); }

  var DRAW = {
    stack: function (d) {
      return [d.series.map(function (s) { return { type: "bar", name: s.name, x: d.x, y: s.y }; }),
        layout({ barmode: "stack", yaxis: { title: d.unit, rangemode: "tozero" } })];
    },
    lines: function (d) {
      return [d.series.map(function (s) { return { type: "scatter", mode: "lines+markers", name: s.name, x: s.x, y: s.y }; }),
        layout({ yaxis: { title: d.unit, rangemode: "tozero" } })];
    },
    top: function (d) {
      return [[{ type: "bar", name: d.name || "top users", x: d.x, y: d.y }],
        layout({ yaxis: { title: d.unit, rangemode: "tozero" } })];
    },
    durations: function (d) {
      return [[{ type: "bar", name: "waits", x: d.x, y: d.wait }, { type: "bar", name: "run times", x: d.x, y: d.run }],
        layout({ barmode: "group", yaxis: { title: "jobs", rangemode: "tozero" } })];
    },
    throughput: function (d) {
      return [[{ type: "scatter", mode: "lines+markers", name: "started", x: d.x, y: d.started },
        { type: "scatter", mode: "lines+markers", name: "ended", x: d.x, y: d.ended }],
        layout({ yaxis: { title: "jobs", rangemode: "tozero" } })];
    },
    sizes: function (d) {
      return [[{ type: "bar", name: "jobs by CPUs", x: d.x, y: d.y }],
        layout({ xaxis: { title: "CPUs", type: "category" }, yaxis: { title: "jobs", rangemode: "tozero" } })];
    },
  };

  function drawAll() {
    if (!window.Plotly) return;
    var holders = document.querySelectorAll("[data-report-charts]");
    for (var i = 0; i < holders.length; i++) {
      var charts = JSON.parse(holders[i].getAttribute("data-report-charts"));
      var divs = holders[i].querySelectorAll("[data-chart]");
      for (var j = 0; j < divs.length; j++) {
        var name = divs[j].getAttribute("data-chart");
        if (!DRAW[name]) continue;
        var spec = DRAW[name](charts[name]);
        window.Plotly.newPlot(divs[j], spec[0], window.fschedTheme.plotLayout(spec[1]), { displayModeBar: false, responsive: true });
      }
    }
  }

  document.addEventListener("DOMContentLoaded", drawAll);
})();
