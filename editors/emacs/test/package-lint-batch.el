;;; package-lint-batch.el --- package-lint for posh.el, offline -*- lexical-binding: t; -*-

;; Usage: emacs -Q --batch [activate the system's elpa packages] -l package-lint-batch.el FILE...
;;
;; `package-lint-batch-and-exit' checks that each dependency is installable from the package
;; archives, which it downloads; CI has no network.  Here the archive is the packages installed
;; on the machine (Debian's elpa-eglot and the rest): `package-alist' stands for
;; `package-archive-contents'.  A dependency that is not installed is still an error.
;;
;; One warning is dropped, by its exact text: package-lint 0.16 (Debian 12) believes no Emacs
;; from 28 on is released ("This makes the package uninstallable in all released Emacs
;; versions."); Emacs 28.1 was released in April 2022 and Debian 12 ships 28.2.  And one error,
;; while the project has no public URL: "Package should have a Homepage or URL header." asks for
;; a link, and the only one the project names (the root Cargo.toml's `repository') is a
;; placeholder under .invalid, which no package should link to.  Once it is a real URL the error
;; counts again (and posh.el should carry it).  Every other warning and error fails.

;;; Code:

(require 'package)
(require 'package-lint)

(defconst posh-lint--stale-warning
  "This makes the package uninstallable in all released Emacs versions."
  "package-lint 0.16's warning for (emacs \"28.1\"), wrong since Emacs 28.1.")

(defconst posh-lint--no-url-error "Package should have a Homepage or URL header."
  "package-lint's error for a package without a URL header.")

(defun posh-lint--no-public-url-p ()
  "Non-nil while the root Cargo.toml's `repository' is a placeholder."
  (let ((manifest (expand-file-name "../../../Cargo.toml"
                                    (file-name-directory (or load-file-name buffer-file-name)))))
    (with-temp-buffer
      (insert-file-contents manifest)
      (and (re-search-forward "^repository = \"https?://\\([^/\"]+\\)" nil t)
           (string-suffix-p ".invalid" (match-string 1))))))

(defconst posh-lint--no-public-url (posh-lint--no-public-url-p)
  "Whether the project has no public URL yet (see the commentary).")

(let ((package-archive-contents package-alist)
      (failed nil)
      (text-quoting-style 'grave))
  (unless (assq 'eglot package-alist)
    (message "package-lint-batch: eglot is not installed (apt-get install elpa-eglot)")
    (kill-emacs 1))
  (dolist (file command-line-args-left)
    (with-temp-buffer
      (insert-file-contents file t)
      (emacs-lisp-mode)
      (pcase-dolist (`(,line ,col ,type ,text) (package-lint-buffer))
        (if (and (eq type 'warning) (equal text posh-lint--stale-warning)
                 (version<= "28.1" emacs-version))
            (message "%s:%d:%d: (ignored, stale in package-lint 0.16) %s" file line col text)
          (if (and (eq type 'error) (equal text posh-lint--no-url-error) posh-lint--no-public-url)
              (message "%s:%d:%d: (ignored: the project has no public URL yet) %s" file line col text)
            (setq failed t)
            (message "%s:%d:%d: %s: %s" file line col type text))))))
  (setq command-line-args-left nil)
  (kill-emacs (if failed 1 0)))

;;; package-lint-batch.el ends here
