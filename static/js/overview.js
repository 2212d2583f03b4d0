/*
 * overview.js: the dashboard's body, as the server's one publisher pushes it.
 *
 * A websocket to /ws/overview/ receives {"type": "overview", "html": "<div id=overview>..."}:
 * the same text for every open dashboard, rendered once per cycle on the server
 * (cluster/overview_publisher.py).  The page swaps it in; it fetches nothing itself.
 * A swap waits while keyboard focus is inside the overview (it would lose its place).
 * When the socket closes, it reconnects with exponential backoff (1 s .. 30 s, jittered);
 * on connecting it is sent the latest overview at once.
 */
(function () {
  "use strict";

  var holder = document.querySelector("[data-overview-ws]");
  if (!holder || !("WebSocket" in window)) return;
  var path = holder.getAttribute("data-overview-ws");
  var attempts = 0;
  var waiting = null; // html received while focus was inside the overview

  function swap(html) {
    var current = document.getElementById("overview");
    if (current && current.contains(document.activeElement)) {
      waiting = html;
      return;
    }
    waiting = null;
    var box = document.createElement("div");
    box.innerHTML = html;
    var fresh = box.querySelector("#overview");
    if (!fresh) return;
    if (current) current.replaceWith(fresh);
    else holder.appendChild(fresh);
  }

  document.addEventListener("focusout", function () {
    setTimeout(function () {
      if (waiting !== null) swap(waiting);
    }, 0);
  });

  function connect() {
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
    var ws = new WebSocket(url);
    ws.onopen = function () {
      attempts = 0;
    };
    ws.onmessage = function (ev) {
      var msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      if (msg && msg.type === "overview" && typeof msg.html === "string") swap(msg.html);
    };
    ws.onclose = function () {
      var delay = Math.min(30000, 1000 * Math.pow(2, attempts));
      attempts += 1;
      setTimeout(connect, delay / 2 + Math.random() * (delay / 2));
    };
    window.fschedOverview = { socket: ws };
  }

  connect();
})();
