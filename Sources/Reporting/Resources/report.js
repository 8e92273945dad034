(function () {
  var outputs = document.querySelectorAll('img.output');
  function count() {
    var loaded = 0;
    outputs.forEach(function (img) { if (img.complete && img.naturalWidth > 0) loaded++; });
    document.body.setAttribute('data-images-loaded', loaded + '/' + outputs.length);
  }
  function watch(img, shown, broken) {
    if (img.complete) { if (img.naturalWidth > 0) shown(); else broken(); }
    else { img.addEventListener('load', shown); img.addEventListener('error', broken); }
  }
  outputs.forEach(function (img) {
    watch(img, function () {
      // A preview's tile already names the output's own size.
      if (!img.classList.contains('preview')) {
        img.closest('figure').querySelector('.dims').textContent = img.naturalWidth + '×' + img.naturalHeight + ' · ';
      }
      count();
    }, count);
  });
  document.querySelectorAll('img.source').forEach(function (img) {
    var figure = img.closest('figure'), caption = figure.querySelector('figcaption');
    watch(img, function () { caption.textContent += ' · ' + img.naturalWidth + '×' + img.naturalHeight; },
          function () { figure.classList.add('unviewable'); caption.textContent = 'the browser cannot show it either'; });
  });
  count();
})();
