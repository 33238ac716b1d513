;;; checkdoc-batch.el --- checkdoc that fails on its warnings -*- lexical-binding: t; -*-

;; Usage: emacs -Q --batch -l checkdoc-batch.el FILE...
;; `checkdoc-file' prints its findings as warnings and exits 0; this counts them and exits 1 if
;; there was any.

;;; Code:

(require 'checkdoc)

(let ((count 0))
  (advice-add 'display-warning :before
              (lambda (&rest _) (setq count (1+ count)))
              '((name . checkdoc-batch-count)))
  (dolist (file command-line-args-left)
    (checkdoc-file file))
  (setq command-line-args-left nil)
  (message "checkdoc: %d warning(s)" count)
  (kill-emacs (if (zerop count) 0 1)))

;;; checkdoc-batch.el ends here
