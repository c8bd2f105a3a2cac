# dualbench's in-server handler for study S2 (mod_perl): the 45-byte page, answered by Perl
# code running inside the Apache process.
package DualbenchPage;
use strict;
use warnings;
use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

sub handler {
    my $r = shift;
    $r->content_type('text/html');
    $r->print("<html><body><h1>It works!</h1></body></html>\n");
    return Apache2::Const::OK;
}
1;
