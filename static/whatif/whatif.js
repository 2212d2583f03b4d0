// Marks the fields whose value differs from A's, so that B's changes stand out before
// the form is sent.
(function () {
  function mark(input) {
    input.classList.toggle("changed", input.value.trim() !== (input.dataset.a || ""));
  }
  document.querySelectorAll("input[data-a]").forEach(function (input) {
    mark(input);
    input.addEventListener("input", function () { mark(input); });
  });
})();
