/*
 * lists.js: a list's table fragment answers a parameter it cannot take with a 400 that
 * names it; htmx leaves error responses unswapped, which would keep the old rows under a
 * filter that no longer matches them.  Swap the 400 into the table so the message shows.
 */
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var target = ev.detail.target;
    if (ev.detail.xhr.status === 400 && target && target.classList.contains("list")) {
      ev.detail.shouldSwap = true;
      ev.detail.isError = false;
    }
  });
})();
