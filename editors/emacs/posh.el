;;; posh.el --- posh's language server for shell scripts and annotation files -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: languages, tools
;; URL: https://example.invalid/posh

;;; Commentary:

;; Registers `posh-lsp' with eglot for shell scripts (`sh-mode', `bash-ts-mode'), where it shows
;; as inlay hints which machine each command of a pipeline runs on and how many bytes each pipe
;; moves, and provides `posh-annotation-mode' for posh's annotation files (*.posh), with
;; diagnostics, completion, hover, formatting and an outline from the same server.
;;
;;   (require 'posh)
;;   (add-hook 'sh-mode-hook #'eglot-ensure)
;;   (add-hook 'posh-annotation-mode-hook #'eglot-ensure)
;;
;; Eglot 1.9 (Debian bookworm's elpa-eglot) has no inlay-hint display of its own; Emacs 29's
;; eglot shows them with `eglot-inlay-hints-mode'.  Hover works everywhere (eldoc).

;;; Code:

(require 'eglot)

(defgroup posh nil
  "posh: shell pipelines placed next to their data."
  :group 'tools
  :prefix "posh-")

(defcustom posh-lsp-program "posh-lsp"
  "The posh-lsp executable (the language server starts with no arguments)."
  :type 'string)

(defconst posh-annotation-sections '("FLAGS" "OPTPARAMS" "PARAMS" "EXAMPLES"))

(defconst posh-annotation-keywords
  '("needs_current_dir" "splittable_across_input" "filters_input" "reduces_input"
    "long_arg_single_dash" "long_args_single_dash" "merge" "output_ratio" "short" "long" "desc"
    "type" "size" "default_value" "multiple" "splittable" "attached" "required" "config"
    "list_separator" "specific_size"))

(defconst posh-annotation-values
  '("input_file" "output_file" "str" "list" "concat" "rerun" "sum" "sort_merge" "uniq_count"))

(defvar posh-annotation-font-lock-keywords
  `((,(concat "^\\([^#[:space:]-][^[:space:]:[]*\\(?: [^[:space:]:[]+\\)*\\)") 1 font-lock-function-name-face)
    (,(regexp-opt posh-annotation-sections 'words) . font-lock-keyword-face)
    (,(regexp-opt posh-annotation-keywords 'symbols) . font-lock-builtin-face)
    (,(regexp-opt posh-annotation-values 'symbols) . font-lock-constant-face))
  "Highlighting for `posh-annotation-mode'.
The server's semantic tokens refine it where the client shows them.")

(defvar posh-annotation-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?# "<" table)
    (modify-syntax-entry ?\n ">" table)
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?\" "\"" table)
    table)
  "Syntax table for `posh-annotation-mode'.")

;;;###autoload
(define-derived-mode posh-annotation-mode prog-mode "posh"
  "Major mode for posh annotation files (*.posh)."
  (setq-local comment-start "# ")
  (setq-local comment-start-skip "#+\\s-*")
  (setq-local indent-tabs-mode nil)
  (setq-local font-lock-defaults '(posh-annotation-font-lock-keywords)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.posh\\'" . posh-annotation-mode))

(defun posh--contact (&optional _interactive)
  "The command that starts posh-lsp."
  (list posh-lsp-program))

;;;###autoload
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '((posh-annotation-mode :language-id "posh") . posh--contact))
  (add-to-list 'eglot-server-programs '((sh-mode bash-ts-mode) . posh--contact)))

(provide 'posh)
;;; posh.el ends here
