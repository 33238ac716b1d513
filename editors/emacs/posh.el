;;; posh.el --- Annotation files and posh-lsp (through eglot) for posh -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The posh authors

;; Author: The posh authors
;; Maintainer: The posh authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: languages, tools, processes
;; SPDX-License-Identifier: MIT OR Apache-2.0

;; This file is not part of GNU Emacs.

;;; Commentary:

;; posh runs the pipelines of a shell script next to the data they read.
;; Its language server, posh-lsp, shows where each command of a pipeline
;; runs and how many bytes each pipe moves (inlay hints), what a
;; pipeline moves under bash and under posh (code lenses), explains a
;; command on hover, and checks posh's annotation files (*.posh).
;;
;; This package provides:
;;
;; - `posh-annotation-mode', a major mode for annotation files, with
;;   highlighting and indentation (TAB).  It needs no server.
;; - `posh-eglot-setup', which tells eglot to use posh-lsp.  Loading
;;   this package changes nothing in eglot: call it yourself.
;; - `posh-hints-mode', which shows posh-lsp's inlay hints and code
;;   lenses as overlays.  Eglot 1.9 (Emacs 28, Debian 12) displays
;;   neither; where eglot has `eglot-inlay-hints-mode' (Emacs 29 and
;;   later) the hints are left to it and this mode only adds the lenses.
;;   `posh-eglot-setup' turns the mode on in every buffer posh-lsp
;;   manages (see `posh-hints-auto').
;; - Hover that reads well without markdown-mode (see
;;   `posh-hover-render-markdown').
;;
;; Setup:
;;
;;   (require 'posh)
;;   (posh-eglot-setup)
;;   (add-hook 'posh-annotation-mode-hook #'eglot-ensure)
;;   (add-hook 'sh-mode-hook #'posh-eglot-ensure)
;;
;; Shell scripts and bash-language-server: eglot 1.9 runs one server
;; per buffer, so a shell script gets either posh-lsp or eglot's usual
;; bash-language-server.  `posh-eglot-setup' decides per script with
;; `posh-eglot-shell-scripts': by default (`configured') posh-lsp takes
;; the scripts of projects that posh is configured for (a posh.toml in
;; the project's root directory or above it, $POSH_CONFIG, or your own
;; ~/.config/posh/posh.toml), and every other script keeps whatever
;; `eglot-server-programs' said before, bash-language-server by default.
;; Set it to `all' to use posh-lsp for every script, or to nil to keep
;; posh-lsp to annotation files.  `posh-eglot-ensure' starts eglot only
;; for the scripts posh-lsp would take; use `eglot-ensure' instead to
;; start bash-language-server for the others too.  `posh-eglot-teardown'
;; undoes `posh-eglot-setup'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'jsonrpc)
(require 'eglot)

(defvar eglot-lsp-context)

(defgroup posh nil
  "Posh: shell pipelines placed next to their data."
  :group 'tools
  :prefix "posh-")

(defcustom posh-lsp-program "posh-lsp"
  "The posh-lsp executable, a file name or a name found in variable `exec-path'.
The language server takes no arguments."
  :type 'string)

;;;; Annotation files

(defcustom posh-annotation-indent-offset 2
  "Indentation of the items under a section of an annotation entry."
  :type 'integer
  :safe #'integerp)

(defconst posh-annotation-sections '("FLAGS" "OPTPARAMS" "PARAMS" "EXAMPLES")
  "The sections of an annotation entry.")

(defconst posh-annotation-command-options
  '("needs_current_dir" "splittable_across_input" "filters_input" "reduces_input"
    "long_arg_single_dash" "long_args_single_dash" "merge" "output_ratio"
    "output_per_input" "output_within_smallest_input" "output_ends_lines"
    "output_ends_as_input" "output_holds_input" "no_match_status" "reads_env" "reads_home"
    "ignores_stdin" "makes_fifos" "output_to_stdout_too" "output_lines_of_input"
    "stdin_file_list")
  "The command options of an annotation entry, in its header's brackets.")

(defconst posh-annotation-argument-fields
  '("short" "long" "desc" "type" "size" "default_value" "multiple" "splittable"
    "attached" "required" "config" "streamable" "file_list" "bounds_lines"
    "bounds_bytes" "dash_digits" "appends" "changes_lines" "list_separator")
  "The fields of an argument (an item under FLAGS, OPTPARAMS or PARAMS).")

(defconst posh-annotation-values
  '("input_file" "output_file" "removed_file" "str" "list" "specific_size"
    "concat" "rerun" "sum" "sort_merge" "uniq_count")
  "The values of the fields `type', `size' and `merge'.")

(defface posh-annotation-example-face
  '((t (:inherit font-lock-doc-face)))
  "Face of the command lines under EXAMPLES in annotation files.")

(defconst posh-annotation--section-re
  "^[ \t]*-[ \t]+\\([A-Z][A-Z_0-9]*\\)[ \t]*:"
  "A section header line of the block layout: `- NAME:'.")

(defconst posh-annotation--item-re "^[ \t]*-\\(?:[ \t]\\|$\\)"
  "A block line: a dash and a blank (a section header or an item).")

(defconst posh-annotation--header-re "^[ \t]*[^-#[:space:]]"
  "An entry header line: neither a block line, nor a comment, nor blank.")

(defun posh-annotation--section-at (pos)
  "Return the name of the section that the line at POS is in, or nil.
nil when the line is in no section: it is an entry header, or above
the first section of its entry."
  (save-excursion
    (goto-char pos)
    (beginning-of-line)
    (let ((case-fold-search nil))
      (catch 'found
        (while (zerop (forward-line -1))
          (cond ((looking-at posh-annotation--section-re)
                 (throw 'found (match-string-no-properties 1)))
                ((looking-at posh-annotation--header-re) (throw 'found nil))))
        nil))))

(defun posh-annotation--example-line-p ()
  "Non-nil if the current line is an item under EXAMPLES.
Match data is set to the item's dash and blanks."
  (save-excursion
    (beginning-of-line)
    (and (not (let ((case-fold-search nil)) (looking-at posh-annotation--section-re)))
         (equal (posh-annotation--section-at (point)) "EXAMPLES")
         (looking-at "[ \t]*-[ \t]*"))))

(defun posh-annotation--syntax-propertize (start end)
  "Make `#' and `\"' plain text in the EXAMPLES items between START and END.
The items under EXAMPLES are command lines, taken as they stand: posh
reads no comment and no string there."
  (save-excursion
    (goto-char start)
    (beginning-of-line)
    (let ((section (posh-annotation--section-at (point)))
          (case-fold-search nil))
      (while (< (point) end)
        (cond ((looking-at posh-annotation--section-re)
               (setq section (match-string-no-properties 1)))
              ((looking-at posh-annotation--header-re) (setq section nil))
              ((and (equal section "EXAMPLES") (looking-at "[ \t]*-[ \t]*"))
               (let ((eol (line-end-position)))
                 (goto-char (match-end 0))
                 (while (re-search-forward "[#\"]" eol t)
                   (put-text-property (match-beginning 0) (match-end 0)
                                      'syntax-table (string-to-syntax "."))))))
        (forward-line 1)))))

(defun posh-annotation--match-example (limit)
  "Find the text of the next EXAMPLES item before LIMIT, for font lock.
Group 1 is the command line."
  (let (found)
    (while (and (not found)
                (re-search-forward "^[ \t]*-[ \t]+\\(.*[^ \t\n]\\)" limit t))
      (let ((data (match-data)))
        (when (posh-annotation--example-line-p)
          (set-match-data data)
          (setq found t))))
    found))

(defvar posh-annotation-font-lock-keywords
  `((posh-annotation--match-example 1 'posh-annotation-example-face t)
    ;; The command an entry is for: `tar[filters_input]:', `git status:'.
    ("^\\([^-#[:space:]][^][[:space:]:]*\\(?:[ \t]+[^-[:space:][][^][[:space:]:]*\\)*\\)[ \t]*[[:]"
     1 font-lock-function-name-face)
    (,posh-annotation--section-re
     1 (if (member (match-string 1) posh-annotation-sections)
           font-lock-keyword-face
         font-lock-warning-face))
    ;; A section of the one-line layout: `cat: PARAMS:[(...)]'.
    (,(concat (regexp-opt posh-annotation-sections 'symbols) "[ \t]*:[ \t]*\\[")
     1 font-lock-keyword-face)
    ;; The option an argument stands for: `short:c', `long:files-from'.
    ("\\_<\\(?:short\\|long\\)[ \t]*:[ \t]*\\([^][,():[:space:]\"]+\\)"
     1 font-lock-variable-name-face)
    (,(regexp-opt (append posh-annotation-command-options
                          posh-annotation-argument-fields)
                  'symbols)
     . font-lock-builtin-face)
    (,(regexp-opt posh-annotation-values 'symbols) . font-lock-constant-face)
    (":[ \t]*\\([0-9]+\\(?:\\.[0-9]+\\)?\\)\\_>" 1 font-lock-constant-face))
  "Highlighting for `posh-annotation-mode'.")

(defvar posh-annotation-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?# "<" table)
    (modify-syntax-entry ?\n ">" table)
    (modify-syntax-entry ?\" "\"" table)
    (modify-syntax-entry ?\\ "\\" table)
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?- "_" table)
    (modify-syntax-entry ?' "." table)
    table)
  "Syntax table for `posh-annotation-mode'.")

(defun posh-annotation-calculate-indentation ()
  "Return the column the current line of an annotation file belongs at.
Entry headers, section headers (`- FLAGS:') and comments are at column
0; the items of a section at `posh-annotation-indent-offset'.  A blank
line is indented for an item when it follows a section header or an
item, else for a header."
  (save-excursion
    (beginning-of-line)
    (let ((case-fold-search nil))
      (cond ((looking-at "[ \t]*#") 0)
            ((looking-at posh-annotation--section-re) 0)
            ((looking-at posh-annotation--item-re) posh-annotation-indent-offset)
            ((looking-at "[ \t]*$")
             (if (catch 'found
                   (while (zerop (forward-line -1))
                     (cond ((looking-at "[ \t]*\\(?:#\\|$\\)"))
                           ((looking-at posh-annotation--item-re) (throw 'found t))
                           (t (throw 'found nil)))))
                 posh-annotation-indent-offset
               0))
            (t 0)))))

(defun posh-annotation-indent-line ()
  "Indent the current line of an annotation file.
See `posh-annotation-calculate-indentation'."
  (interactive)
  (let ((column (posh-annotation-calculate-indentation)))
    (if (<= (current-column) (current-indentation))
        (indent-line-to column)
      (save-excursion (indent-line-to column)))))

;;;###autoload
(define-derived-mode posh-annotation-mode prog-mode "posh"
  "Major mode for posh's annotation files (*.posh).
An entry starts with a header at column 0, `grep[filters_input]:';
its sections follow as lines `- FLAGS:', `- OPTPARAMS:', `- PARAMS:'
and `- EXAMPLES:', each with its items below it, indented by
`posh-annotation-indent-offset': `  - short:c, long:count'.  TAB puts
a line where that layout wants it.

With `posh-eglot-setup', eglot uses posh-lsp for these files:
diagnostics, completion, hover, formatting and an outline.

\\{posh-annotation-mode-map}"
  (setq-local comment-start "# ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "#+[ \t]*")
  (setq-local indent-tabs-mode nil)
  (setq-local indent-line-function #'posh-annotation-indent-line)
  (setq-local electric-indent-chars (cons ?: electric-indent-chars))
  (setq-local syntax-propertize-function #'posh-annotation--syntax-propertize)
  (setq-local font-lock-defaults '(posh-annotation-font-lock-keywords))
  ;; A changed section header changes how the lines below it look.
  (setq-local jit-lock-contextually t)
  (setq-local imenu-generic-expression
              '((nil "^\\([^-#[:space:]][^][[:space:]:]*\\(?:[ \t]+[^-[:space:][][^][[:space:]:]*\\)*\\)[ \t]*[[:]" 1))))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.posh\\'" . posh-annotation-mode))

;;;; Eglot

(defcustom posh-eglot-shell-scripts 'configured
  "Which shell scripts `posh-eglot-setup' gives to posh-lsp.
Eglot 1.9 runs one language server per buffer: a script that posh-lsp
takes gets no bash-language-server.

`configured': the scripts of projects that posh is configured for: a
  posh.toml in the project's root directory (the one eglot gives the
  server) or one of its parents, a file named by $POSH_CONFIG, or your
  own posh.toml in $XDG_CONFIG_HOME/posh/ (~/.config/posh/).  The
  other scripts keep the server that `eglot-server-programs' gives
  them without posh, bash-language-server by default.
`all': every shell script.
nil: none; posh-lsp only serves annotation files.

The scripts are those of the major modes in `posh-eglot-shell-modes'.
Call `posh-eglot-setup' again after changing this."
  :type '(choice (const :tag "Scripts of projects with a posh.toml" configured)
                 (const :tag "All shell scripts" all)
                 (const :tag "None (annotation files only)" nil)))

(defcustom posh-eglot-shell-modes '(sh-mode bash-ts-mode)
  "The major modes of the shell scripts that posh-lsp may serve.
See `posh-eglot-shell-scripts'.  Call `posh-eglot-setup' again after
changing this."
  :type '(repeat symbol))

(defclass posh-eglot-server (eglot-lsp-server) ()
  :documentation "An eglot connection to posh-lsp.")

(defun posh--posh-server-p (server)
  "Non-nil if SERVER, an eglot connection, is posh-lsp."
  (and server
       (or (cl-typep server 'posh-eglot-server)
           (equal (plist-get (eglot--server-info server) :name) "posh-lsp"))))

(defun posh--capable (feature)
  "Non-nil if the current buffer's server has capability FEATURE."
  (if (fboundp 'eglot-server-capable)
      (eglot-server-capable feature)
    (with-no-warnings (eglot--server-capable feature))))

(defun posh--project-root ()
  "The directory that eglot would give a server as the project's root."
  (let* ((eglot-lsp-context t)
         (project (project-current)))
    (if project (project-root project) default-directory)))

(defun posh-configured-p ()
  "Non-nil if posh is configured for the current buffer's project.
That is when posh-lsp would read a posh.toml for it: $POSH_CONFIG,
a posh.toml in the project's root directory or one of its parents,
or $XDG_CONFIG_HOME/posh/posh.toml."
  (let ((env (getenv "POSH_CONFIG"))
        (xdg (getenv "XDG_CONFIG_HOME")))
    (and (not (file-remote-p default-directory))
         (or (and env (not (string-empty-p env)))
             (locate-dominating-file (posh--project-root) "posh.toml")
             (file-regular-p
              (expand-file-name "posh/posh.toml"
                                (if (and xdg (not (string-empty-p xdg)))
                                    xdg
                                  "~/.config")))))))

(defun posh--wants-script-p ()
  "Non-nil if posh-lsp should serve the current shell script."
  (pcase posh-eglot-shell-scripts
    ('all t)
    ('configured (posh-configured-p))
    (_ nil)))

(defun posh--contact ()
  "Return the eglot contact for posh-lsp."
  (list 'posh-eglot-server posh-lsp-program))

(defun posh--annotation-contact (&optional _interactive _project)
  "The eglot contact for annotation files: posh-lsp."
  (posh--contact))

(defun posh--mode-matches-p (mode spec)
  "Non-nil if the major MODE is one of an `eglot-server-programs' key SPEC."
  (let ((specs (if (or (symbolp spec) (keywordp (cadr spec))) (list spec) spec)))
    (cl-some (lambda (s)
               (provided-mode-derived-p mode (if (consp s) (car s) s)))
             specs)))

(defun posh--other-contact (interactive project)
  "The contact `eglot-server-programs' gives the current buffer without posh.
INTERACTIVE and PROJECT are passed on to a contact that is a function."
  (let ((contact (cl-loop for (spec . contact) in eglot-server-programs
                          unless (eq contact #'posh--shell-contact)
                          when (posh--mode-matches-p major-mode spec)
                          return contact)))
    (if (functionp contact)
        (let ((arity (func-arity contact)))
          (if (or (eq (cdr arity) 'many) (>= (cdr arity) 2))
              (funcall contact interactive project)
            (funcall contact interactive)))
      contact)))

(defun posh--shell-contact (&optional interactive project)
  "The eglot contact for a shell script: posh-lsp, or the server before posh.
See `posh-eglot-shell-scripts'.  INTERACTIVE and PROJECT are what eglot
passes to a contact function."
  (if (posh--wants-script-p)
      (posh--contact)
    (posh--other-contact interactive project)))

(defun posh--shell-entry ()
  "The entry of `eglot-server-programs' for the shell modes."
  (cons posh-eglot-shell-modes #'posh--shell-contact))

(defun posh--remove-entries ()
  "Remove the entries `posh-eglot-setup' made from `eglot-server-programs'."
  (setq eglot-server-programs
        (cl-remove-if (lambda (entry)
                        (memq (cdr entry) '(posh--shell-contact posh--annotation-contact)))
                      eglot-server-programs)))

;;;###autoload
(defun posh-eglot-setup ()
  "Make eglot use posh-lsp for annotation files and for shell scripts.
Adds entries for `posh-annotation-mode' and, unless
`posh-eglot-shell-scripts' is nil, for the modes of
`posh-eglot-shell-modes' to `eglot-server-programs'.  A shell script
that posh-lsp does not take (see `posh-eglot-shell-scripts') keeps
the server eglot would give it without posh: bash-language-server
unless you changed that.  Turns on `posh-hints-mode' in the buffers
posh-lsp manages when `posh-hints-auto' is non-nil, and shows its
hover as plain text when `markdown-mode' is missing (see
`posh-hover-render-markdown').

Starts no server: add `eglot-ensure' to `posh-annotation-mode-hook',
and `posh-eglot-ensure' (or `eglot-ensure') to `sh-mode-hook'.
Calling it again applies changed options; `posh-eglot-teardown' undoes
it."
  (interactive)
  (posh--remove-entries)
  (when posh-eglot-shell-scripts
    (push (posh--shell-entry) eglot-server-programs))
  (push (cons '(posh-annotation-mode :language-id "posh") #'posh--annotation-contact)
        eglot-server-programs)
  (add-hook 'eglot-managed-mode-hook #'posh--eglot-managed))

(defun posh-eglot-teardown ()
  "Undo `posh-eglot-setup'.
Servers already running keep running until you shut them down."
  (interactive)
  (posh--remove-entries)
  (remove-hook 'eglot-managed-mode-hook #'posh--eglot-managed))

;;;###autoload
(defun posh-eglot-ensure ()
  "Start eglot in this shell script if posh-lsp would serve it.
For `sh-mode-hook' after `posh-eglot-setup', instead of `eglot-ensure'
when you do not want eglot (bash-language-server) in the scripts
posh-lsp does not take; see `posh-eglot-shell-scripts'."
  (when (posh--wants-script-p)
    (eglot-ensure)))

(cl-defmethod eglot-client-capabilities :around ((_server posh-eglot-server))
  "Add to eglot's capabilities what `posh-hints-mode' supports."
  (let* ((caps (cl-call-next-method))
         (workspace (copy-sequence (plist-get caps :workspace)))
         (document (copy-sequence (plist-get caps :textDocument))))
    (unless (plist-get workspace :inlayHint)
      (setq workspace (plist-put workspace :inlayHint '(:refreshSupport t))))
    (unless (plist-get workspace :codeLens)
      (setq workspace (plist-put workspace :codeLens '(:refreshSupport t))))
    (unless (plist-get document :inlayHint)
      (setq document (plist-put document :inlayHint '(:dynamicRegistration :json-false))))
    (unless (plist-get document :codeLens)
      (setq document (plist-put document :codeLens '(:dynamicRegistration :json-false))))
    (plist-put (plist-put (copy-sequence caps) :workspace workspace)
               :textDocument document)))

(cl-defmethod eglot-handle-request
  ((server posh-eglot-server) (_method (eql workspace/inlayHint/refresh)) &rest _)
  "Show SERVER's hints anew: posh-lsp reloaded posh.toml or annotations."
  (posh-hints--refresh-server server)
  nil)

(cl-defmethod eglot-handle-request
  ((server posh-eglot-server) (_method (eql workspace/codeLens/refresh)) &rest _)
  "Show SERVER's code lenses anew."
  (posh-hints--refresh-server server)
  nil)

;;;; Hover

(defcustom posh-hover-render-markdown 'auto
  "Whether posh renders posh-lsp's hover markdown itself.
posh-lsp writes its hover in markdown.  Eglot renders markdown with
`gfm-view-mode' (of the package `markdown-mode'); without it, it shows
the markup as it stands.

`auto': posh renders it when `gfm-view-mode' is missing.
t: posh renders it always.
nil: eglot renders it."
  :type '(choice (const :tag "When markdown-mode is missing" auto)
                 (const :tag "Always" t)
                 (const :tag "Never" nil)))

(defface posh-hover-code-face
  '((t (:inherit font-lock-constant-face)))
  "Face of inline code in hover text that posh renders.")

(defun posh--render-markdown-p ()
  "Non-nil if posh renders hover markdown itself, see `posh-hover-render-markdown'."
  (if (eq posh-hover-render-markdown 'auto)
      (not (fboundp 'gfm-view-mode))
    posh-hover-render-markdown))

(defun posh--setup-hover ()
  "Have eldoc show the hover through `posh-hover-eldoc-function' if wanted."
  (when (posh--render-markdown-p)
    (setq-local eldoc-documentation-functions
                (mapcar (lambda (f)
                          (if (eq f 'eglot-hover-eldoc-function)
                              #'posh-hover-eldoc-function
                            f))
                        eldoc-documentation-functions))))

(defconst posh--inline-markdown-re
  (concat "`\\([^`\n]+\\)`"                       ; 1 code
          "\\|\\*\\*\\([^*\n]+\\)\\*\\*"          ; 2 bold
          "\\|\\[\\([^]\n]+\\)\\](\\([^)\n]*\\))" ; 3 text, 4 link target
          "\\|\\\\\\([[:punct:]]\\)"               ; 5 escaped character
          "\\|\\*\\([^*[:space:]][^*\n]*\\)\\*")  ; 6 emphasis
  "The inline markup `posh--render-markdown' knows.")

(defun posh--render-inline (text)
  "Return TEXT, one line of markdown, with its inline markup rendered."
  (let ((start 0) (parts '()))
    (while (string-match posh--inline-markdown-re text start)
      (push (substring text start (match-beginning 0)) parts)
      (push (cond ((match-beginning 1)
                   (propertize (match-string 1 text) 'face 'posh-hover-code-face))
                  ((match-beginning 2)
                   (let ((inner (posh--render-inline (match-string 2 text))))
                     (add-face-text-property 0 (length inner) 'bold t inner)
                     inner))
                  ((match-beginning 3) (posh--render-inline (match-string 3 text)))
                  ((match-beginning 5) (match-string 5 text))
                  (t (let ((inner (posh--render-inline (match-string 6 text))))
                       (add-face-text-property 0 (length inner) 'italic t inner)
                       inner)))
            parts)
      (setq start (match-end 0)))
    (push (substring text start) parts)
    (apply #'concat (nreverse parts))))

(defun posh--fontify-code (code language)
  "Return CODE fontified as LANGUAGE (a fence's info string), if posh knows it."
  (if (member language '("sh" "bash" "shell"))
      (with-temp-buffer
        (insert code)
        (let ((inhibit-message t)
              (message-log-max nil))
          (delay-mode-hooks (sh-mode))
          (font-lock-ensure))
        (buffer-string))
    (propertize code 'face 'posh-hover-code-face)))

(defun posh--render-markdown (markdown)
  "Return MARKDOWN as text to read without `markdown-mode'.
Renders what posh-lsp writes: fenced code blocks (shell code is
fontified), `inline code', **bold**, *emphasis*, links, headings,
backslash escapes and rules (---)."
  (let ((lines (split-string markdown "\n"))
        (out '())
        fence code)
    (dolist (line lines)
      (cond (fence
             (if (string-match-p "\\`[ \t]*```[ \t]*\\'" line)
                 (progn
                   (push (posh--fontify-code (string-join (nreverse code) "\n") fence) out)
                   (setq fence nil code nil))
               (push line code)))
            ((string-match "\\`[ \t]*```[ \t]*\\([^`[:space:]]*\\)" line)
             (setq fence (match-string 1 line) code nil))
            ((string-match-p "\\`[ \t]*\\(?:---+\\|\\*\\*\\*+\\|___+\\)[ \t]*\\'" line)
             (push (propertize (make-string 40 ?─) 'face 'shadow) out))
            ((string-match "\\`#+[ \t]+\\(.*\\)" line)
             (let ((heading (posh--render-inline (match-string 1 line))))
               (add-face-text-property 0 (length heading) 'bold t heading)
               (push heading out)))
            (t (push (posh--render-inline line) out))))
    (when fence
      (push (posh--fontify-code (string-join (nreverse code) "\n") fence) out))
    (string-trim (string-join (nreverse out) "\n"))))

(defun posh--hover-text (contents)
  "Return the text of hover CONTENTS (MarkupContent or MarkedString[s])."
  (mapconcat
   (lambda (content)
     (cond ((stringp content) (posh--render-markdown content))
           ((plist-get content :language)
            (posh--fontify-code (plist-get content :value) (plist-get content :language)))
           ((equal (plist-get content :kind) "markdown")
            (posh--render-markdown (plist-get content :value)))
           (t (string-trim (plist-get content :value)))))
   (if (vectorp contents) (append contents nil) (list contents))
   "\n"))

(defun posh-hover-eldoc-function (callback &rest _)
  "Show the hover at point, markdown rendered by posh, through CALLBACK.
A member of `eldoc-documentation-functions' in place of
`eglot-hover-eldoc-function' where `posh-hover-render-markdown' says."
  (when (posh--capable :hoverProvider)
    (let ((buffer (current-buffer)))
      (jsonrpc-async-request
       (eglot--current-server-or-lose)
       :textDocument/hover (eglot--TextDocumentPositionParams)
       :success-fn (lambda (hover)
                     (when (buffer-live-p buffer)
                       (with-current-buffer buffer
                         (let ((contents (plist-get hover :contents)))
                           (funcall callback
                                    (unless (seq-empty-p contents)
                                      (posh--hover-text contents)))))))
       :deferred :textDocument/hover))
    t))

;;;; Inlay hints and code lenses

(defcustom posh-hints-auto t
  "Non-nil: `posh-eglot-setup' turns on `posh-hints-mode' where posh-lsp serves."
  :type 'boolean)

(defcustom posh-hints-renderer 'auto
  "Which renderer displays posh-lsp's inlay hints in `posh-hints-mode'.
`auto': eglot's `eglot-inlay-hints-mode' where eglot has it (Emacs 29
  and later), else posh's overlays.
`posh': posh's overlays always.
`eglot': eglot only (no hints where eglot cannot show them).
Code lenses are shown by posh in every case: no eglot shows them."
  :type '(choice (const :tag "Eglot's where it has them" auto)
                 (const :tag "posh's overlays" posh)
                 (const :tag "Eglot's only" eglot)))

(defcustom posh-hints-delay 0.3
  "Seconds of idle time after a change before hints and lenses are asked anew."
  :type 'number)

(defcustom posh-lens-position 'above
  "Where code lenses are shown: `above' the line, or at its `end'."
  :type '(choice (const :tag "On a line above" above)
                 (const :tag "At the end of the line" end)))

(defface posh-hint-face
  '((t (:inherit shadow)))
  "Face of posh-lsp's inlay hints.")

(defface posh-lens-face
  '((t (:inherit (shadow italic))))
  "Face of posh-lsp's code lenses.")

(defvar posh-hints-mode)  ; Defined at the end, by `define-minor-mode'.

(defvar-local posh-hints--overlays nil
  "The overlays of the inlay hints shown.")

(defvar-local posh-hints--lens-overlays nil
  "The overlays of the code lenses shown.")

(defvar-local posh-hints--timer nil
  "The timer that will ask for hints and lenses after a change.")

(defvar-local posh-hints--covered nil
  "(VERSION BEG END): the document version and region the hints shown are of.")

(defvar-local posh-hints--last-error nil
  "The last error the server answered a hint or lens request with.")

(defun posh-hints--native-p ()
  "Return non-nil if the hints are left to eglot, see `posh-hints-renderer'."
  (pcase posh-hints-renderer
    ('auto (fboundp 'eglot-inlay-hints-mode))
    ('eglot t)
    (_ nil)))

(defun posh-hints--version ()
  "The version of the current document as eglot last told the server."
  (plist-get (eglot--VersionedTextDocumentIdentifier) :version))

(defun posh-hints--flush-changes ()
  "Flush the edits eglot has not yet sent to the server."
  (when (fboundp 'eglot--signal-textDocument/didChange)
    (eglot--signal-textDocument/didChange)))

(defun posh-hints--wanted-region ()
  "The region to show hints in: the windows' text and a screen around it.
nil when no window shows the buffer."
  (let ((windows (get-buffer-window-list (current-buffer) nil t)))
    (when windows
      (save-excursion
        (save-restriction
          (widen)
          (let* ((lines (apply #'max (mapcar #'window-body-height windows)))
                 (beg (apply #'min (mapcar #'window-start windows)))
                 (end (apply #'max (mapcar (lambda (w) (window-end w t)) windows))))
            (goto-char beg)
            (forward-line (- lines))
            (setq beg (point))
            (goto-char end)
            (forward-line lines)
            (cons beg (line-end-position))))))))

(defun posh-hints--label (hint)
  "The text of HINT's label (a string or label parts)."
  (let ((label (plist-get hint :label)))
    (if (stringp label)
        label
      (mapconcat (lambda (part) (plist-get part :value)) label ""))))

(defun posh-hints--markup-string (markup)
  "The text of MARKUP, a string or MarkupContent, or nil."
  (cond ((stringp markup) markup)
        ((consp markup) (plist-get markup :value))))

(defun posh-hints--tooltip (hint)
  "The tooltip of HINT: its own, or those of its label parts."
  (or (posh-hints--markup-string (plist-get hint :tooltip))
      (let ((label (plist-get hint :label)))
        (and (not (stringp label))
             (let ((tips (delq nil (mapcar (lambda (part)
                                             (posh-hints--markup-string
                                              (plist-get part :tooltip)))
                                           label))))
               (and tips (string-join tips "\n")))))))

(defun posh-hints--true-p (value)
  "Non-nil if the JSON boolean VALUE is true."
  (and value (not (eq value :json-false))))

(defun posh-hints--make-overlay (hint version)
  "Make the overlay of HINT, an inlay hint of the document VERSION."
  (let* ((pos (eglot--lsp-position-to-point (plist-get hint :position)))
         (label (posh-hints--label hint))
         (text (concat (if (posh-hints--true-p (plist-get hint :paddingLeft)) " " "")
                       (propertize label 'face 'posh-hint-face)
                       (if (posh-hints--true-p (plist-get hint :paddingRight)) " " "")))
         (tooltip (posh-hints--tooltip hint))
         (ov (make-overlay pos pos nil nil nil)))
    (when tooltip
      (put-text-property 0 (length text) 'help-echo tooltip text))
    (overlay-put ov 'before-string text)
    (overlay-put ov 'priority 1)
    (overlay-put ov 'posh-hint label)
    (overlay-put ov 'posh-version version)
    ov))

(defun posh-hints--paint (buffer version region hints)
  "Show HINTS, the answer for REGION of BUFFER's document VERSION.
An answer for another version than the document's is dropped: a new
request follows the change.  The overlays of REGION and those of other
versions are replaced; until an answer arrives, the old ones stay."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (when (and posh-hints-mode (eql version (posh-hints--version)))
        (save-excursion
          (save-restriction
            (widen)
            (let ((beg (car region)) (end (cdr region)))
              (setq posh-hints--overlays
                    (cl-remove-if (lambda (ov)
                                    (when (or (null (overlay-buffer ov))
                                              (<= beg (overlay-start ov) end)
                                              (not (eql (overlay-get ov 'posh-version) version)))
                                      (delete-overlay ov)
                                      t))
                                  posh-hints--overlays))
              (seq-doseq (hint hints)
                (push (posh-hints--make-overlay hint version) posh-hints--overlays))
              (setq posh-hints--covered (list version beg end)))))))))

(defun posh-hints--lens-overlay (pos titles version)
  "Make the overlay of lens TITLES for the line of POS, of document VERSION."
  (save-excursion
    (goto-char pos)
    (let* ((text (propertize (string-join titles " | ") 'face 'posh-lens-face))
           (ov (if (eq posh-lens-position 'end)
                   (make-overlay (line-end-position) (line-end-position))
                 (make-overlay (line-beginning-position) (line-beginning-position)))))
      (overlay-put ov 'before-string
                   (if (eq posh-lens-position 'end)
                       (concat "  " text)
                     (concat (make-string (current-indentation) ?\s) text "\n")))
      (overlay-put ov 'posh-lens titles)
      (overlay-put ov 'posh-version version)
      ;; Of the before-strings at one place, those of higher priority show last: its line
      ;; comes before a hint at the start of the line (priority 1).
      (overlay-put ov 'priority 0)
      ov)))

(defun posh-hints--paint-lenses (buffer version lenses)
  "Show LENSES, the code lenses of BUFFER's document VERSION.
Lenses without a title are resolved first when the server can."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (when (and posh-hints-mode (eql version (posh-hints--version)))
        (let ((titled '()))
          (seq-doseq (lens lenses)
            (let ((title (plist-get (plist-get lens :command) :title)))
              (cond (title (push lens titled))
                    ((plist-get (posh--capable :codeLensProvider) :resolveProvider)
                     (posh-hints--resolve-lens buffer version lens)))))
          (mapc #'delete-overlay posh-hints--lens-overlays)
          (setq posh-hints--lens-overlays nil)
          (posh-hints--add-lenses version (nreverse titled)))))))

(defun posh-hints--add-lenses (version lenses)
  "Add overlays for LENSES of document VERSION, one a line, titles joined."
  (save-excursion
    (save-restriction
      (widen)
      (let ((lines '()))
        (dolist (lens lenses)
          (let* ((pos (eglot--lsp-position-to-point
                       (plist-get (plist-get lens :range) :start)))
                 (line (progn (goto-char pos) (line-beginning-position)))
                 (cell (assq line lines)))
            (if cell
                (setcdr cell (append (cdr cell) (list (plist-get (plist-get lens :command) :title))))
              (push (list line (plist-get (plist-get lens :command) :title)) lines))))
        (dolist (line (nreverse lines))
          ;; A lens resolved late joins the titles of its line.
          (let ((old (cl-find-if (lambda (ov) (= (overlay-start ov) (car line)))
                                 posh-hints--lens-overlays)))
            (when old
              (setcdr line (append (overlay-get old 'posh-lens) (cdr line)))
              (delete-overlay old)
              (setq posh-hints--lens-overlays (delq old posh-hints--lens-overlays))))
          (push (posh-hints--lens-overlay (car line) (cdr line) version)
                posh-hints--lens-overlays))))))

(defun posh-hints--resolve-lens (buffer version lens)
  "Ask the server for LENS's command, then show it if BUFFER is at VERSION."
  (jsonrpc-async-request
   (eglot--current-server-or-lose) :codeLens/resolve lens
   :success-fn (lambda (resolved)
                 (when (buffer-live-p buffer)
                   (with-current-buffer buffer
                     (when (and posh-hints-mode
                                (eql version (posh-hints--version))
                                (plist-get (plist-get resolved :command) :title))
                       (posh-hints--add-lenses version (list resolved))))))
   :error-fn (lambda (error) (setq posh-hints--last-error error))))

(defun posh-hints-refresh ()
  "Ask the server for the hints and lenses of the current buffer now."
  (interactive)
  (when (and posh-hints-mode (eglot-managed-p))
    (when (timerp posh-hints--timer) (cancel-timer posh-hints--timer))
    (setq posh-hints--timer nil)
    (posh-hints--flush-changes)
    (let* ((server (eglot--current-server-or-lose))
           (buffer (current-buffer))
           (version (posh-hints--version))
           (document (eglot--TextDocumentIdentifier))
           (on-error (lambda (error)
                       (when (buffer-live-p buffer)
                         (with-current-buffer buffer
                           (setq posh-hints--last-error error)
                           ;; ContentModified, ServerCancelled: ask again.
                           (when (and posh-hints-mode
                                      (memq (plist-get error :code) '(-32801 -32802))
                                      (not (timerp posh-hints--timer)))
                             (posh-hints--schedule)))))))
      (when (and (not (posh-hints--native-p)) (posh--capable :inlayHintProvider))
        (let ((region (posh-hints--wanted-region)))
          (when region
            (jsonrpc-async-request
             server :textDocument/inlayHint
             (list :textDocument document
                   :range (list :start (eglot--pos-to-lsp-position (car region))
                                :end (eglot--pos-to-lsp-position (cdr region))))
             :success-fn (lambda (hints) (posh-hints--paint buffer version region hints))
             :error-fn on-error))))
      (when (posh--capable :codeLensProvider)
        (jsonrpc-async-request
         server :textDocument/codeLens (list :textDocument document)
         :success-fn (lambda (lenses) (posh-hints--paint-lenses buffer version lenses))
         :error-fn on-error)))))

(defun posh-hints--timer-fired (buffer)
  "Refresh BUFFER's hints and lenses, as the timer set after a change."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setq posh-hints--timer nil)
      ;; Not an error in a timer for a server that went away.
      (condition-case error
          (posh-hints-refresh)
        (error (setq posh-hints--last-error error))))))

(defun posh-hints--schedule (&optional now)
  "Ask for hints and lenses after `posh-hints-delay' idle seconds.
With NOW, as soon as Emacs is done with the current command instead."
  (when (timerp posh-hints--timer) (cancel-timer posh-hints--timer))
  (setq posh-hints--timer
        (if now
            (run-at-time 0 nil #'posh-hints--timer-fired (current-buffer))
          (run-with-idle-timer posh-hints-delay nil
                               #'posh-hints--timer-fired (current-buffer)))))

(defun posh-hints--after-change (&rest _)
  "Ask for hints and lenses anew once the user pauses."
  (posh-hints--schedule))

(defun posh-hints--covers-p (window &optional start)
  "Non-nil if the hints shown cover WINDOW's text, from START if given."
  (pcase posh-hints--covered
    (`(,version ,beg ,end)
     (and (eql version (posh-hints--version))
          (<= beg (or start (window-start window)))
          (<= (window-end window t) end)))))

(defun posh-hints--after-scroll (window start)
  "Ask for hints if WINDOW, now from START, displays text without them."
  (unless (or (posh-hints--native-p) (timerp posh-hints--timer)
              (posh-hints--covers-p window start))
    (posh-hints--schedule)))

(defun posh-hints--after-window-change ()
  "Ask for hints if a window displays text of the buffer without them."
  (unless (or (posh-hints--native-p) (timerp posh-hints--timer)
              (cl-every #'posh-hints--covers-p
                        (get-buffer-window-list (current-buffer) nil t)))
    (posh-hints--schedule)))

(defun posh-hints--refresh-server (server)
  "Ask anew for the hints and lenses of every buffer SERVER manages."
  (dolist (buffer (eglot--managed-buffers server))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (when posh-hints-mode
          (setq posh-hints--covered nil)
          (when (and (posh-hints--native-p) (fboundp 'jit-lock-refontify))
            (jit-lock-refontify))
          (posh-hints--schedule t))))))

(defun posh-hints--delete-overlays ()
  "Delete the overlays of hints and lenses."
  (mapc #'delete-overlay posh-hints--overlays)
  (mapc #'delete-overlay posh-hints--lens-overlays)
  (setq posh-hints--overlays nil
        posh-hints--lens-overlays nil
        posh-hints--covered nil))

(defvar eglot-inlay-hints-mode)
(declare-function eglot-inlay-hints-mode "eglot" (&optional arg))

;;;###autoload
(define-minor-mode posh-hints-mode
  "Show posh-lsp's inlay hints and code lenses in this buffer.
Needs a buffer that eglot manages with posh-lsp (`posh-eglot-setup'
turns the mode on there).  The hints say where each command of a
pipeline runs and how many bytes each pipe moves; the lenses, above
a pipeline, what it moves under bash and under posh.

Eglot 1.9 shows neither: this mode shows them as overlays, asked for
the text in the windows and a screen around it, anew after a change
once Emacs has been idle for `posh-hints-delay' seconds, after
scrolling and when the server says its hints changed; the old ones
stay until the new ones arrive.  Where eglot has
`eglot-inlay-hints-mode', the hints are left to it (see
`posh-hints-renderer').  `posh-hints-refresh' asks anew at once."
  :lighter nil
  (cond
   (posh-hints-mode
    (if (not (eglot-managed-p))
        (progn
          (setq posh-hints-mode nil)
          (message "posh-hints-mode: eglot does not manage this buffer"))
      (add-hook 'after-change-functions #'posh-hints--after-change nil t)
      (add-hook 'window-scroll-functions #'posh-hints--after-scroll nil t)
      (add-hook 'window-configuration-change-hook #'posh-hints--after-window-change nil t)
      (when (fboundp 'eglot-inlay-hints-mode)
        (eglot-inlay-hints-mode (if (posh-hints--native-p) 1 -1)))
      ;; Not at once: eglot tells the server about the document after
      ;; `eglot-managed-mode-hook', which turns this mode on.
      (posh-hints--schedule t)))
   (t
    (remove-hook 'after-change-functions #'posh-hints--after-change t)
    (remove-hook 'window-scroll-functions #'posh-hints--after-scroll t)
    (remove-hook 'window-configuration-change-hook #'posh-hints--after-window-change t)
    (when (timerp posh-hints--timer) (cancel-timer posh-hints--timer))
    (setq posh-hints--timer nil)
    (posh-hints--delete-overlays))))

(defun posh--eglot-managed ()
  "Set up or tear down posh's additions when eglot manages a buffer or stops.
Member of `eglot-managed-mode-hook' after `posh-eglot-setup'."
  (cond ((and (eglot-managed-p) (posh--posh-server-p (eglot-current-server)))
         (posh--setup-hover)
         (when posh-hints-auto (posh-hints-mode 1)))
        (posh-hints-mode (posh-hints-mode -1))))

(provide 'posh)
;;; posh.el ends here
