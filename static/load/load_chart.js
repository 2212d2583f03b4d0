/*
 * load_chart.js: the node page's load chart (plotly, served locally by cluster.plotly_asset).
 *
 * The data is the JSON inside #load-chart-data, rendered by the server; live.js re-fetches
 * that element when the "load" topic changes and htmx.onLoad hands it here, which redraws
 * the same plot with Plotly.react: no reload, no new script.  One row per index (mem, ut,
 * r15s, r1m, r15m) sharing the time axis; each threshold in force a horizontal line
 * (LoadSched dashed, LoadStop dotted); each action of the load check a marker on every row
 * at the figure it judged, and a vertical line across the rows.
 */
(function () {
  "use strict";

  var COLOURS = { drain: "#c2410c", undrain: "#15803d", stop: "#b91c1c", continue: "#1d4ed8" };
  var SYMBOLS = { drain: "triangle-down", undrain: "triangle-up", stop: "x", continue: "circle" };
  var GAP = 0.03;
  // The time range the user zoomed to, kept across live redraws (null: the whole window).
  var userRange = null;

  function figure(d) {
    var rows = d.indices.length;
    var height = (1 - GAP * (rows - 1)) / rows;
    var traces = [];
    var layout = {
      height: 150 * rows + 60, margin: { t: 10, l: 60, r: 10, b: 30 }, showlegend: true,
      legend: { orientation: "h" }, hovermode: "closest",
      xaxis: {
        type: "date", range: userRange || [d.since, d.until], anchor: "y" + (rows > 1 ? rows : ""),
        rangeselector: { buttons: [
          { count: 1, label: "1 h", step: "hour", stepmode: "backward" },
          { count: 6, label: "6 h", step: "hour", stepmode: "backward" },
          { step: "all", label: "all" },
        ] },
      },
      shapes: [],
    };
    d.indices.forEach(function (index, i) {
      var axis = i === 0 ? "y" : "y" + (i + 1);
      var top = 1 - i * (height + GAP);
      layout["yaxis" + (i === 0 ? "" : i + 1)] = {
        domain: [Math.max(0, top - height), top], title: { text: index.label, font: { size: 11 } },
        rangemode: "tozero",
      };
      traces.push({
        type: "scatter", mode: "lines", name: index.key, x: d.times, y: d.series[index.key],
        xaxis: "x", yaxis: axis, line: { width: 1.5 }, meta: { role: "index", index: index.key },
      });
      [["sched", "dash"], ["stop", "dot"]].forEach(function (kind) {
        var t = index[kind[0]];
        if (!t) return;
        traces.push({
          type: "scatter", mode: "lines", name: t.name + "=" + t.value, x: [d.since, d.until], y: [t.value, t.value],
          xaxis: "x", yaxis: axis, hoverinfo: "name",
          line: { dash: kind[1], width: 1.5, color: kind[0] === "stop" ? "#b91c1c" : "#c2410c" },
          meta: { role: "threshold", index: index.key, kind: kind[0], key: t.name, value: t.value },
        });
      });
      Object.keys(COLOURS).forEach(function (action) {
        var marks = d.marks.filter(function (m) { return m.action === action && index.key in m.figures; });
        if (!marks.length) return;
        traces.push({
          type: "scatter", mode: "markers", name: action, legendgroup: action, showlegend: i === 0,
          x: marks.map(function (m) { return m.time; }), y: marks.map(function (m) { return m.figures[index.key]; }),
          text: marks.map(function (m) { return m.text; }), hovertemplate: "%{text}<extra></extra>",
          xaxis: "x", yaxis: axis, marker: { color: COLOURS[action], symbol: SYMBOLS[action], size: 10 },
          meta: { role: "mark", index: index.key, action: action },
        });
      });
    });
    d.marks.forEach(function (m) {
      layout.shapes.push({
        type: "line", xref: "x", yref: "paper", x0: m.time, x1: m.time, y0: 0, y1: 1,
        line: { color: COLOURS[m.action], width: 1, dash: "dot" }, name: m.action,
      });
    });
    return { data: traces, layout: window.fschedTheme.plotLayout(layout) };
  }

  function draw(dataEl) {
    var plot = document.getElementById("load-chart");
    var json = dataEl.querySelector('script[type="application/json"]');
    if (!plot || !json || !window.Plotly) return;
    var f = figure(JSON.parse(json.textContent));
    window.Plotly.react(plot, f.data, f.layout, { displayModeBar: false, responsive: true });
    if (!plot.getAttribute("data-drawn")) {
      plot.on("plotly_relayout", function (ev) {
        if (ev["xaxis.range[0]"] !== undefined) userRange = [ev["xaxis.range[0]"], ev["xaxis.range[1]"]];
        else if (ev["xaxis.range"]) userRange = ev["xaxis.range"];
        else if (ev["xaxis.autorange"]) userRange = null;
      });
    }
    plot.setAttribute("data-drawn", String(Number(plot.getAttribute("data-drawn") || 0) + 1));
  }

  function fromRoot(root) {
    var el = root && root.id === "load-chart-data" ? root : (root || document).querySelector("#load-chart-data");
    if (el) draw(el);
  }

  // htmx calls onLoad with the body once the page is ready, then with each swapped element.
  if (window.htmx) window.htmx.onLoad(fromRoot);
  else document.addEventListener("DOMContentLoaded", function () { fromRoot(document); });
})();
