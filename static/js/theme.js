/*
 * theme.js: the console's light/dark theme, and the colours plotly charts take from it.
 *
 * Loaded in <head> without defer so <html data-theme> is set before the first paint (no
 * flash of the wrong theme).  The choice is kept in localStorage under the Django admin's
 * own key and values ("theme": "light", "dark" or "auto"), so the console and the admin
 * share one choice; with none ("auto"), the system preference decides and is followed live.
 *
 * Charts call fschedTheme.plotLayout(layout) for their colours; when the theme changes,
 * every drawn chart (plotly marks it .js-plotly-plot) is re-laid out, without a redraw of
 * its data.
 */
(function () {
  "use strict";

  var KEY = "theme";
  var media = window.matchMedia("(prefers-color-scheme: dark)");

  function stored() {
    try {
      var v = window.localStorage.getItem(KEY);
      return v === "light" || v === "dark" ? v : null;
    } catch (e) {
      return null; // storage disabled: follow the system
    }
  }

  // The user's choice ("light" or "dark"), or null to follow the system.
  var chosen = stored();

  function current() {
    return chosen || (media.matches ? "dark" : "light");
  }

  function colours() {
    var s = window.getComputedStyle(document.documentElement);
    function v(name) { return s.getPropertyValue(name).trim(); }
    return { text: v("--text"), muted: v("--muted"), grid: v("--border"), surface: v("--surface"), surface2: v("--surface-2") };
  }

  // The theme's colours as plotly relayout keys, for the axes the layout has.
  function updates(layout) {
    var c = colours();
    var u = {
      "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)", "font.color": c.text,
      "hoverlabel.bgcolor": c.surface, "hoverlabel.bordercolor": c.grid, "hoverlabel.font.color": c.text,
    };
    var axes = Object.keys(layout).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
    if (axes.indexOf("xaxis") < 0) axes.push("xaxis");
    if (axes.indexOf("yaxis") < 0) axes.push("yaxis");
    axes.forEach(function (a) {
      u[a + ".gridcolor"] = c.grid;
      u[a + ".zerolinecolor"] = c.grid;
      u[a + ".linecolor"] = c.grid;
      u[a + ".tickcolor"] = c.muted;
      if (layout[a] && layout[a].rangeselector) {
        u[a + ".rangeselector.bgcolor"] = c.surface2;
        u[a + ".rangeselector.activecolor"] = c.grid;
        u[a + ".rangeselector.font.color"] = c.text;
      }
    });
    return u;
  }

  function set(obj, path, value) {
    var keys = path.split(".");
    for (var i = 0; i < keys.length - 1; i++) {
      if (typeof obj[keys[i]] !== "object" || obj[keys[i]] === null) obj[keys[i]] = {};
      obj = obj[keys[i]];
    }
    obj[keys[keys.length - 1]] = value;
  }

  // A chart's layout with the theme's colours merged in (the layout is changed and returned).
  function plotLayout(layout) {
    var u = updates(layout);
    Object.keys(u).forEach(function (k) { set(layout, k, u[k]); });
    return layout;
  }

  function relayoutCharts() {
    if (!window.Plotly) return;
    var plots = document.querySelectorAll(".js-plotly-plot");
    for (var i = 0; i < plots.length; i++) {
      if (plots[i].layout) window.Plotly.relayout(plots[i], updates(plots[i].layout));
    }
  }

  function syncButton() {
    var b = document.getElementById("theme-toggle");
    if (b) b.setAttribute("aria-pressed", current() === "dark" ? "true" : "false");
  }

  function apply() {
    var theme = current();
    document.documentElement.setAttribute("data-theme", theme);
    syncButton();
    relayoutCharts();
  }

  function toggle() {
    chosen = current() === "dark" ? "light" : "dark";
    try {
      window.localStorage.setItem(KEY, chosen);
    } catch (e) {
      // Storage disabled: applied to this page, not remembered.
    }
    apply();
  }

  document.documentElement.setAttribute("data-theme", current());
  media.addEventListener("change", function () { if (!chosen) apply(); });
  // Another tab (or the admin) changed the choice.
  window.addEventListener("storage", function (ev) {
    if (ev.key === KEY) { chosen = stored(); apply(); }
  });
  document.addEventListener("DOMContentLoaded", function () {
    syncButton();
    var b = document.getElementById("theme-toggle");
    if (b) b.addEventListener("click", toggle);
  });

  window.fschedTheme = { current: current, plotLayout: plotLayout, relayoutCharts: relayoutCharts, toggle: toggle };
})();
