/*
 * power.js: the Power page's two plots (plotly, served locally at /power/plotly.min.js).
 *
 * The data is rendered by the server into data-power-chart / data-power-timeline; htmx.onLoad
 * redraws after every live refresh of #power-body.  Chart: nodes per power state over time
 * (stacked steps).  Timeline: one row per node, a bar per period in one power state.
 */
(function () {
  "use strict";

  var ORDER = ["up", "powering_up", "powering_down", "powered_down"];

  function chart(el) {
    var d = JSON.parse(el.getAttribute("data-power-chart"));
    var traces = ORDER.map(function (c) {
      return {
        type: "scatter", mode: "lines", stackgroup: "one", line: { shape: "hv", width: 0.5, color: d.colours[c] },
        name: d.labels[c], x: d.chart.times, y: d.chart.series[c],
      };
    });
    var layout = { margin: { t: 10, l: 40, r: 10, b: 30 }, height: 240, yaxis: { title: "nodes", rangemode: "tozero" },
      legend: { orientation: "h" } };
    window.Plotly.newPlot(el, traces, window.fschedTheme.plotLayout(layout), { displayModeBar: false, responsive: true });
  }

  function timeline(el) {
    var d = JSON.parse(el.getAttribute("data-power-timeline"));
    if (!d.timeline.length) {
      el.innerHTML = '<p class="empty">No node changed power state in the last hour.</p>';
      return;
    }
    var traces = ORDER.map(function (c) {
      var rows = d.timeline.filter(function (s) { return s.category === c; });
      return {
        type: "bar", orientation: "h", name: d.labels[c], marker: { color: d.colours[c] },
        y: rows.map(function (s) { return s.node; }),
        base: rows.map(function (s) { return s.start; }),
        x: rows.map(function (s) { return s.ms; }),
        hovertemplate: "%{y}: " + d.labels[c] + "<extra></extra>",
      };
    });
    var nodes = Array.from(new Set(d.timeline.map(function (s) { return s.node; }))).sort();
    var layout = { barmode: "overlay", margin: { t: 10, l: 70, r: 10, b: 30 }, height: 80 + 22 * nodes.length,
      xaxis: { type: "date" }, yaxis: { categoryorder: "array", categoryarray: nodes.slice().reverse() },
      legend: { orientation: "h" } };
    window.Plotly.newPlot(el, traces, window.fschedTheme.plotLayout(layout), { displayModeBar: false, responsive: true });
  }

  function drawAll(root) {
    if (!window.Plotly) return;
    var c = (root || document).querySelectorAll("[data-power-chart]");
    for (var i = 0; i < c.length; i++) chart(c[i]);
    var t = (root || document).querySelectorAll("[data-power-timeline]");
    for (var j = 0; j < t.length; j++) timeline(t[j]);
  }

  if (window.htmx) {
    window.htmx.onLoad(function (elt) { drawAll(elt); });
  }
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
})();
