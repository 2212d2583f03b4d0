/*
 * power.js: the Power page's two plots (plotly, served locally by cluster.plotly_asset).
 *
 * The data is rendered by the server into data-power-chart / data-power-timeline; htmx.onLoad
 * redraws after every live refresh of #power-body.  Chart: nodes per power state over time
 * (stacked steps).  Timeline: one row per node, a bar per period in one power state.
 */
(function () {
  "use strict";

  var ORDER = ["up", "powering_up", "powering_down", "powered_down"];
  // Above the plot: plotly's default horizontal legend sits under the x axis, over its
  // date line.
  var LEGEND = { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" };

  function chart(el) {
    var d = JSON.parse(el.getAttribute("data-power-chart"));
    var traces = ORDER.map(function (c) {
      return {
        type: "scatter", mode: "lines", stackgroup: "one", line: { shape: "hv", width: 0.5, color: d.colours[c] },
        name: d.labels[c], x: d.chart.times, y: d.chart.series[c],
      };
    });
    var layout = { margin: { t: 34, l: 40, r: 10, b: 40 }, height: 260, yaxis: { title: "nodes", rangemode: "tozero" },
      xaxis: { type: "date", range: [d.since, d.chart.times[d.chart.times.length - 1]] },
      legend: LEGEND, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)" };
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
    var layout = { barmode: "overlay", margin: { t: 34, l: 70, r: 10, b: 40 }, height: 100 + 22 * nodes.length,
      xaxis: { type: "date", range: [d.since, d.chart.times[d.chart.times.length - 1]] },
      yaxis: { categoryorder: "array", categoryarray: nodes.slice().reverse() },
      legend: LEGEND, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)" };
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
