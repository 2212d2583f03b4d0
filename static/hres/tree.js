/*
 * tree.js: draws each resource's sunburst on the Resources page (plotly, served locally).
 *
 * The data is in the data-plot attribute of each [data-sunburst] element, rendered by the
 * server with the table beside it.  htmx.onLoad runs for the first render and for every
 * live refresh of the fragment (live.js swaps #hres-tree), so the plots follow the table.
 * Clicking a layer opens its page.
 */
(function () {
  "use strict";

  function draw(el) {
    if (!window.Plotly || el.getAttribute("data-drawn") === "1") return;
    var d = JSON.parse(el.getAttribute("data-plot"));
    var resource = el.getAttribute("data-sunburst");
    var trace = {
      type: "sunburst",
      ids: d.ids,
      labels: d.labels,
      parents: d.parents,
      values: d.values,
      text: d.text,
      branchvalues: "remainder",
      hovertemplate: "%{label}<br>%{text}<extra></extra>",
      marker: {
        colors: d.colours.map(function (c) { return c < 0 ? 0 : c; }),
        colorscale: [[0, "#dceefb"], [0.7, "#f6c344"], [1, "#d64545"]],
        cmin: 0,
        cmax: 100,
        line: { width: 1 },
      },
    };
    var layout = window.fschedTheme.plotLayout({ margin: { t: 0, l: 0, r: 0, b: 0 }, height: 260 });
    window.Plotly.newPlot(el, [trace], layout, { displayModeBar: false, responsive: true });
    el.setAttribute("data-drawn", "1");
    el.on("plotly_click", function (ev) {
      var p = ev.points && ev.points[0];
      if (p && p.id) {
        window.location.href = "/hres/" + encodeURIComponent(resource) + "/" + encodeURIComponent(p.id) + "/";
      }
      return false;
    });
  }

  function drawAll(root) {
    var els = (root || document).querySelectorAll("[data-sunburst]");
    for (var i = 0; i < els.length; i++) draw(els[i]);
  }

  if (window.htmx) {
    window.htmx.onLoad(function (elt) { drawAll(elt); });
  }
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
})();
