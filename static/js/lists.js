/*
 * lists.js: two things htmx does not do for the console's lists (cluster/lists).
 *
 * A table fragment answers a parameter it cannot take with a 400 that names it; htmx
 * leaves error responses unswapped, which would keep the old rows under a filter that no
 * longer matches them.  Swap the 400 into the table so the message shows.
 *
 * A click on a column header sorts the table, which lies outside the filter form: copy the
 * table's sort (data-sort) into the form, so the next filter change keeps it.
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

  document.addEventListener("htmx:afterSettle", function (ev) {
    var table = ev.detail.elt;
    if (!table || !table.classList || !table.classList.contains("list") || !table.id) return;
    if (!table.hasAttribute("data-sort")) return;
    var form = document.querySelector('form[hx-target="#' + table.id + '"]');
    if (!form) return;
    var input = form.querySelector('input[name="sort"]');
    var sort = table.getAttribute("data-sort");
    if (!sort) {
      if (input) input.remove();
      return;
    }
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = "sort";
      form.appendChild(input);
    }
    input.value = sort;
  });
})();
